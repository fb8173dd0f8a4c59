// Package fcm sends pushes through Firebase Cloud Messaging's HTTP v1 API
// with the firebase.google.com/go/v4 messaging client, and classifies every
// answer into a providers.Outcome right where the SDK returns it (its error
// helpers use type assertions and fail on a wrapped error).
//
// Authentication is a service-account JSON: the sender signs the JWT
// assertion and fetches access tokens from the JSON's token_uri itself
// (golang.org/x/oauth2/google), so a token endpoint failure is classified
// (a rejected key is a credential problem, not a network one) instead of
// disappearing into the SDK's transport error. HUSH_FCM_ENDPOINT overrides
// the messaging endpoint.
//
// The SDK would retry 503s and network errors by itself (up to 4 times,
// 0/1/2/4 s, honouring Retry-After up to 2 minutes), after hush checked the
// push's limiter slot. The transport under it (attempt.go) lets exactly one
// HTTP attempt of a Send through, refuses one that would leave after
// Push.SendBy, and hands Send the real answer; hush's own retry policy,
// which books a new slot per attempt, takes over from there.
//
// It imports providers, payload and the firebase SDK; nothing of Redis or
// Asynq.
package fcm
