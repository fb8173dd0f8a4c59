// Package webhook signs and verifies hush's webhook requests by the
// Standard Webhooks specification (https://www.standardwebhooks.com): three
// headers, webhook-id, webhook-timestamp and webhook-signature, the last a
// space-separated list of "v1,<base64 HMAC-SHA256 of id.timestamp.body>",
// one per secret, so that a receiver rotating its secret accepts requests
// signed with either.
//
// hush signs every POST with this package (worker's webhook), and a Go
// backend verifies with it: Verify checks the signature against any of the
// receiver's secrets and the timestamp against Tolerance. Receivers in
// other languages use any Standard Webhooks library with the same whsec_
// secret.
//
// It imports only the standard library, so a backend can depend on it
// alone; a test enforces this.
package webhook
