// Package webpush sends pushes to browsers, web apps installed on iOS and
// UnifiedPush distributors through the Web Push protocol (RFC 8030), and
// classifies every answer into a providers.Outcome right where the HTTP
// answer is read.
//
// A device's token is the browser's PushSubscription JSON
// (payload.ParseWebPushSubscription). Each push is encrypted for it with
// RFC 8291 (aes128gcm of RFC 8188, one record: a fresh P-256 key and salt
// per message, the subscription's auth secret mixed in) and signed for with
// VAPID (RFC 8292): "Authorization: vapid t=<ES256 JWT>, k=<public key>",
// the JWT's aud the endpoint's origin, exp 12 hours ahead (a push service
// refuses more than 24), sub the app's contact. A JWT is reused per origin
// until an hour before it expires.
//
// Headers per push: TTL from Push.Expiry (seconds); Urgency "high" for an
// urgent (high or critical) job, "low" for a silent normal one, else
// "normal"; Topic from Content.CollapseKey (payload checks it at submit).
// The body is payload.RenderWebPush's JSON, what a service worker reads.
//
// One http.Client serves every push service: its transport pools
// connections per origin and speaks HTTP/2 where the service offers it.
//
// The primitives are the standard library's (crypto/ecdh, crypto/hkdf,
// crypto/aes with cipher.NewGCM, crypto/ecdsa): their RFC 8291 Appendix A
// and RFC 8188 §3.1 outputs are checked byte for byte in ece_test.go.
// github.com/SherClockHolmes/webpush-go v1.4.0 draws its salt (a private
// package variable) and its ephemeral key (elliptic.GenerateKey with
// crypto/rand) inside SendNotification, so no test can fix them to
// reproduce the vectors, and its own tests check none; see docs/webpush.md.
//
// It imports providers and payload; nothing of Redis or Asynq.
package webpush
