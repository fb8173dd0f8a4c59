package payload

import "time"

// Priority of a job. Priorities listed in HUSH_THROTTLE_BYPASS skip the limiter.
type Priority string

const (
	PriorityNormal   Priority = "normal"
	PriorityHigh     Priority = "high"
	PriorityCritical Priority = "critical"
)

// Job is a notification for one or more recipients, as submitted.
type Job struct {
	// ID is the idempotency key; generated when empty.
	ID         string      `json:"id,omitempty"`
	Recipients []Recipient `json:"recipients"`
	Content
	// AcceptedAt is set by hush when it accepts the job; TTL counts from it
	// unless SendAt is set.
	AcceptedAt time.Time `json:"accepted_at,omitzero"`
}

// Content is what every recipient of a job receives.
type Content struct {
	// App names the application the job is for, one the operator
	// configured (HUSH_APPS_FILE; "default" for the HUSH_APNS_*/HUSH_FCM_*
	// keys): its credentials send the pushes and its rules throttle them.
	// Empty: the only app, when there is one. Validate checks its syntax
	// (ValidApp); whether it is configured is for the worker to say.
	App      string            `json:"app,omitempty"`
	Alert    *Alert            `json:"alert,omitempty"`
	Data     map[string]string `json:"data,omitempty"`
	Priority Priority          `json:"priority,omitempty"`
	// Category names the kind of notification ("marketing"). Validate checks
	// its syntax (ValidCategory); whether the operator configured it
	// (HUSH_THROTTLE_CATEGORIES) is for the worker to say. It is not
	// Alert.Category, the APNs action category.
	Category    string `json:"category,omitempty"`
	CollapseKey string `json:"collapse_key,omitempty"`
	// SendAt, when set, is the earliest time the job is sent; TTL counts
	// from it.
	SendAt *time.Time `json:"send_at,omitempty"`
	// TTL is a Go duration ("2h"); exclusive with ExpiresAt.
	TTL       Duration   `json:"ttl,omitzero"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	Silent    bool       `json:"silent,omitempty"`
}

// Recipient is one user and their devices.
type Recipient struct {
	UserID string `json:"user_id"`
	// Timezone is the IANA name of the user's time zone, for quiet hours;
	// empty means the server's default. See Location.
	Timezone string   `json:"timezone,omitempty"`
	Devices  []Device `json:"devices"`
}

// Device is one push token on one platform.
type Device struct {
	Platform Platform `json:"platform"`
	Token    string   `json:"token"`
}

// Alert is the visible part of a notification.
type Alert struct {
	Title    string `json:"title,omitempty"`
	Body     string `json:"body,omitempty"`
	Sound    string `json:"sound,omitempty"`
	Badge    *int   `json:"badge,omitempty"`
	Image    string `json:"image,omitempty"`
	Category string `json:"category,omitempty"`
	ThreadID string `json:"thread_id,omitempty"`
}

// Duration is a time.Duration written in JSON as a Go duration string ("2h").
type Duration time.Duration
