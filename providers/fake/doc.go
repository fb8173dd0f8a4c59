// Package fake holds local fake APNs, FCM and Web Push servers that answer
// like the real providers, for the tests, the demo and the benchmarks.
//
// The fake APNs is an HTTP/2 TLS server (net/http/httptest) on 127.0.0.1 that
// checks the provider JWT's shape (or accepts a client certificate) and answers
// per device token from a script. The fake FCM is a plain HTTP server with the
// v1 send endpoint and an OAuth 2 token endpoint for service-account JWTs; its
// error bodies use the real error-detail format, so the firebase SDK's error
// helpers (messaging.IsUnregistered, ...) recognise them.
//
// The fake Web Push service is an HTTP/2 TLS server that makes subscriptions
// as a browser would, verifies each push's VAPID JWT and decrypts its body
// with the subscription's keys (DecryptWebPush, written apart from
// providers/webpush).
//
// All record every request that passed authentication (token, headers, body,
// arrival time, status answered), so a test can assert on what a device would
// have received. Recording can be switched off for throughput benchmarks.
//
// WriteAPNsKey and WriteServiceAccount generate credentials for the real SDK
// clients: a P-256 .p8 key and an RSA service-account JSON whose token_uri
// points at the fake FCM.
//
// The package imports only the standard library; it must not import testing.
package fake
