// Package providers holds the outcome taxonomy every push provider answer is
// classified into (Delivered, TokenInvalid, Throttled, Transient, Permanent)
// and the Push a sender sends. The senders live in subpackages: apns
// (sideshow/apns2), fcm (firebase.google.com/go/v4 messaging), webpush
// (RFC 8030/8291/8292 on the standard library) and dryrun; fake holds local
// fake APNs, FCM and Web Push servers shared by tests, the demo and the
// benchmarks.
//
// providers imports payload and the provider SDKs; it knows nothing of Redis,
// Asynq or throttling.
package providers
