package payload

// FCMMessage is the FCM HTTP v1 "message" object without its target token,
// as RenderFCM produces it. Fields that depend on the moment of sending
// (android.ttl, the apns-expiration header) are left to the sender.
type FCMMessage struct {
	Notification *FCMNotification  `json:"notification,omitempty"`
	Data         map[string]string `json:"data,omitempty"`
	Android      *FCMAndroid       `json:"android,omitempty"`
	APNS         *FCMAPNS          `json:"apns,omitempty"`
}

// FCMNotification is the cross-platform notification block.
type FCMNotification struct {
	Title string `json:"title,omitempty"`
	Body  string `json:"body,omitempty"`
	Image string `json:"image,omitempty"`
}

// FCMAndroid is the android override block.
type FCMAndroid struct {
	// Priority is "normal" or "high".
	Priority    string `json:"priority,omitempty"`
	CollapseKey string `json:"collapse_key,omitempty"`
	// TTL is set by the sender from the delivery's expiry ("3600s").
	TTL          string                  `json:"ttl,omitempty"`
	Notification *FCMAndroidNotification `json:"notification,omitempty"`
}

// FCMAndroidNotification is android.notification.
type FCMAndroidNotification struct {
	Sound string `json:"sound,omitempty"`
	Tag   string `json:"tag,omitempty"`
}

// FCMAPNS is the apns override block for iOS devices reached through FCM.
type FCMAPNS struct {
	Headers map[string]string `json:"headers,omitempty"`
	// Payload is the APNs JSON body: {"aps": {...}, custom keys...}.
	Payload map[string]any `json:"payload,omitempty"`
}
