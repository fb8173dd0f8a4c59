package payload

import "time"

// Limits of a job, from docs/job.md and the providers' documented maxima.
const (
	// MaxRecipients is the largest number of recipients in one job.
	MaxRecipients = 10000
	// MaxDevices is the largest number of devices of one recipient.
	MaxDevices = 10
	// MaxPayloadBytes is the largest rendered provider payload (APNs body,
	// FCM message JSON), the limit both providers enforce.
	MaxPayloadBytes = 4096
	// MaxIDBytes bounds a job id and a user id.
	MaxIDBytes = 256
	// MaxTTL is the longest ttl, FCM's maximum time to live.
	MaxTTL = 28 * 24 * time.Hour
	// MaxSendAhead is how far after submission send_at may be: as far as
	// the longest ttl.
	MaxSendAhead = MaxTTL
	// MaxCategoryBytes bounds a category name (see ValidCategory).
	MaxCategoryBytes = 32
	// MaxAppBytes bounds an app name (see ValidApp).
	MaxAppBytes = 32
	// MaxCollapseKeyBytes is APNs' limit for apns-collapse-id.
	MaxCollapseKeyBytes = 64
	// MinAPNsTokenLen and MaxAPNsTokenLen bound an APNs device token in hex
	// characters.
	MinAPNsTokenLen = 64
	MaxAPNsTokenLen = 200
	// MaxFCMTokenLen bounds an FCM registration token.
	MaxFCMTokenLen = 4096
	// MaxProblems is the most problems a ValidationError lists; it counts
	// the others in Omitted.
	MaxProblems = 100
	// MaxDataKeys bounds the keys of data: each costs at least 6 bytes of
	// the rendered payload ("k":""), so more cannot fit MaxPayloadBytes.
	MaxDataKeys = MaxPayloadBytes / 6
	// MaxBatchJobs is the most jobs one batch (POST
	// /v1/notifications:batch) carries.
	MaxBatchJobs = 1000
)
