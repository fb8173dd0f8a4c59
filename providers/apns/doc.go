// Package apns sends pushes to Apple Push Notification service through
// github.com/sideshow/apns2, with token (.p8) or certificate (.p12)
// authentication, and classifies every answer into a providers.Outcome right
// where apns2 returns it.
//
// One Sender holds one apns2 client for the life of the process: its HTTP/2
// connection multiplexes concurrent sends, as Apple asks (opening and
// closing connections rapidly is treated as a denial-of-service attack).
//
// Headers per push: apns-topic from Config.Topic; apns-push-type "alert", or
// "background" for a silent push; apns-priority 10 for an urgent (high or
// critical) alert, 5 for a normal one and always 5 for a silent push (Apple
// rejects background pushes at 10; 5 is the power-considerate delivery FCM
// also maps its "normal" priority to); apns-expiration from Push.Expiry;
// apns-collapse-id from Content.CollapseKey; apns-id a UUID derived from
// Push.ID (name-based SHA-1, RFC 4122 version 5), so a retry of the same push
// carries the same apns-id.
//
// It imports providers, payload and apns2; nothing of Redis or Asynq.
package apns
