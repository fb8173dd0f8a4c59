// Package demo shows the per-user throttle at work with nothing to set up
// and no network: it starts an embedded Redis, a hush worker with its HTTP
// API on a free loopback port, and local fake APNs, FCM and Web Push
// servers that the real clients talk to; it submits a burst, prints a live
// timeline of what happens to each push and a summary per user, and checks
// each rule on the times the fake providers saw.
//
// hush demo parses its flags and calls Run. The package may import
// payload, throttle, client, setup, providers/fake, providers/webpush and
// internal/cmdkit.
package demo
