// Package payload is hush's job contract: the JSON types a backend submits,
// their validation (every problem at once, each naming its field path), the
// Asynq task type names, and the rendering of a job's content into the APNs
// JSON body and the FCM v1 message.
//
// It imports only the standard library: backends can depend on it without
// pulling in Redis, Asynq or any provider SDK. It embeds the IANA time zone
// database (time/tzdata), so that a recipient's timezone is checked the
// same way on every machine.
//
// # Decoding
//
// Decode is strict: field names match exactly, unknown or duplicate fields
// and values of the wrong JSON type are field problems, and nothing may
// follow the job. ttl is a Go duration string ("90s", "2h"); send_at and
// expires_at are RFC 3339.
//
// # Validation rules
//
// Job.Validate reports every problem at once, in document order, each as
// "field.path: message" (recipients[3].devices[0].token: not hex ...):
//
//   - id: optional (generated when empty, see NewID); at most 256 bytes of
//     valid UTF-8, printable, no whitespace or control characters (it ends up
//     in Redis keys and Asynq task ids).
//   - recipients: 1 to 10,000.
//   - recipients[i].user_id: required, at most 256 bytes, valid UTF-8, no
//     control characters; unique within the job (a duplicate names the index
//     of the first).
//   - recipients[i].timezone: empty (the server's default), or an IANA time
//     zone name that time.LoadLocation knows from the embedded database;
//     "Local" and other names of the machine's own zone are refused.
//   - recipients[i].devices: 1 to 10.
//   - devices[j].platform: "apns", "fcm" or "webpush".
//   - devices[j].token: required; apns: 64 to 200 hex characters, an even
//     number; fcm: 1 to 4096 characters of A-Z a-z 0-9 _ : . -; webpush: a
//     browser's PushSubscription JSON (ParseWebPushSubscription: an https
//     endpoint, a 65-byte P-256 keys.p256dh, a 16-byte keys.auth); unique
//     within the recipient.
//   - alert: required with a title or a body unless silent; absent when
//     silent (silent pushes are data-only / content-available).
//   - alert.badge: 0 or more (0 clears the badge).
//   - alert.image: an https URL.
//   - data: keys non-empty; "aps" is rejected (APNs), and so are FCM's
//     reserved "from", "notification", "message_type" and keys starting with
//     "google." or "gcm."; "image" is rejected when alert.image is set.
//   - priority: empty (means normal), "normal", "high" or "critical".
//   - category: empty, or 1 to 32 of a-z 0-9 _ - (ValidCategory); whether
//     it is configured is checked by the worker, not here.
//   - collapse_key: at most 64 bytes (APNs apns-collapse-id).
//   - send_at: not before the time passed to Validate, and at most
//     MaxSendAhead (28 days) after it.
//   - ttl: positive, at most 28 days (FCM's maximum); exclusive with
//     expires_at. It counts from send_at when set, else from accepted_at.
//   - expires_at: not before the time passed to Validate; after send_at
//     when both are set.
//   - the rendered APNs body and the rendered FCM message, for the platforms
//     the job uses, at most 4096 bytes each, and the Web Push body at most
//     4096 once encrypted (reported on "alert", or on "data" for a silent
//     job).
//   - with webpush devices, collapse_key at most 32 of A-Z a-z 0-9 - _ (it
//     is the Topic header).
//
// # Rendering
//
// RenderAPNs and RenderFCM turn Content into what the providers receive;
// their output is deterministic and pinned by golden files in testdata/
// (go test ./payload -update rewrites them). Content.APNsPriority and
// Content.APNsPushType give the matching headers.
package payload
