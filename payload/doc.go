// Package payload is hush's job contract: the JSON types a backend submits,
// their validation (every problem at once, each naming its field path), the
// Asynq task type names, and the rendering of a job's content into the APNs
// JSON body and the FCM v1 message.
//
// It imports only the standard library: backends can depend on it without
// pulling in Redis, Asynq or any provider SDK.
package payload
