package payload

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var testNow = time.Date(2026, 11, 21, 18, 0, 0, 0, time.UTC)

var (
	apnsToken  = strings.Repeat("ab", 32) // 64 hex characters
	apnsToken2 = strings.Repeat("cd", 32)
	fcmToken   = "fGx1:APA91b_token-Example.1"
)

// validJob returns a job that passes Validate at testNow.
func validJob() Job {
	return Job{
		ID: "order-4711-shipped",
		Recipients: []Recipient{
			{UserID: "u-1", Devices: []Device{{Platform: APNs, Token: apnsToken}, {Platform: FCM, Token: fcmToken}}},
			{UserID: "u-2", Devices: []Device{{Platform: APNs, Token: apnsToken2}}},
		},
		Content: Content{
			Alert: &Alert{Title: "Shipped", Body: "Order 4711 is on its way"},
			Data:  map[string]string{"order": "4711"},
		},
	}
}

func recipients(n int) []Recipient {
	rs := make([]Recipient, n)
	for i := range rs {
		rs[i] = Recipient{UserID: fmt.Sprintf("u-%d", i), Devices: []Device{{Platform: FCM, Token: fcmToken}}}
	}
	return rs
}

func devices(n int) []Device {
	ds := make([]Device, n)
	for i := range ds {
		ds[i] = Device{Platform: FCM, Token: fmt.Sprintf("token-%d", i)}
	}
	return ds
}

func at(d time.Duration) *time.Time {
	t := testNow.Add(d)
	return &t
}

// problem is a wanted FieldError: the exact field path and a fragment of
// the message.
type problem struct{ field, msg string }

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(j *Job)
		want   []problem
	}{
		{"valid", func(*Job) {}, nil},
		{"valid silent with data", func(j *Job) {
			j.Alert = nil
			j.Silent = true
		}, nil},
		{"valid everything set", func(j *Job) {
			j.Alert = &Alert{Title: "t", Body: "b", Sound: "default", Badge: intPtr(0), Image: "https://x.example/i.png", Category: "C", ThreadID: "th"}
			j.Priority = PriorityCritical
			j.Category = "order_updates-2"
			j.CollapseKey = strings.Repeat("k", 64)
			j.SendAt = at(MaxSendAhead)
			j.TTL = Duration(MaxTTL)
			j.Recipients[0].Timezone = "Europe/Berlin"
		}, nil},

		// id
		{"id empty is allowed", func(j *Job) { j.ID = "" }, nil},
		{"id 256 bytes", func(j *Job) { j.ID = strings.Repeat("i", 256) }, nil},
		{"id 257 bytes", func(j *Job) { j.ID = strings.Repeat("i", 257) }, []problem{{"id", "257 bytes, limit 256"}}},
		{"id with space", func(j *Job) { j.ID = "order 1" }, []problem{{"id", "whitespace or a control character at byte 5"}}},
		{"id with newline", func(j *Job) { j.ID = "order\n1" }, []problem{{"id", "whitespace or a control character"}}},
		{"id with NUL", func(j *Job) { j.ID = "a\x00" }, []problem{{"id", "control character"}}},
		{"id invalid utf-8", func(j *Job) { j.ID = "a\xff" }, []problem{{"id", "not valid UTF-8"}}},
		{"id unicode printable", func(j *Job) { j.ID = "bestellung-über-€" }, nil},
		{"id .", func(j *Job) { j.ID = "." }, []problem{{"id", `cannot be ".": a URL path cannot carry it`}}},
		{"id ..", func(j *Job) { j.ID = ".." }, []problem{{"id", `cannot be "..": a URL path cannot carry it`}}},
		{"id with dots and more is fine", func(j *Job) { j.ID = "..a" }, nil},
		{"id with a slash is fine", func(j *Job) { j.ID = "orders/4711" }, nil},

		// recipients
		{"no recipients", func(j *Job) { j.Recipients = nil }, []problem{{"recipients", "at least one recipient"}}},
		{"10000 recipients", func(j *Job) { j.Recipients = recipients(MaxRecipients) }, nil},
		{"10001 recipients", func(j *Job) { j.Recipients = recipients(MaxRecipients + 1) }, []problem{{"recipients", "10001 recipients, limit 10000"}}},
		{"user_id missing", func(j *Job) { j.Recipients[1].UserID = "" }, []problem{{"recipients[1].user_id", "required"}}},
		{"user_id 257 bytes", func(j *Job) { j.Recipients[1].UserID = strings.Repeat("u", 257) }, []problem{{"recipients[1].user_id", "257 bytes, limit 256"}}},
		{"user_id control char", func(j *Job) { j.Recipients[0].UserID = "u\t1" }, []problem{{"recipients[0].user_id", "control character"}}},
		{"user_id with space is fine", func(j *Job) { j.Recipients[0].UserID = "Ann Smith" }, nil},
		{"user_id .", func(j *Job) { j.Recipients[1].UserID = "." }, []problem{{"recipients[1].user_id", `cannot be ".": a URL path cannot carry it`}}},
		{"user_id ..", func(j *Job) { j.Recipients[1].UserID = ".." }, []problem{{"recipients[1].user_id", `cannot be "..": a URL path cannot carry it`}}},
		{"duplicate user_id names both", func(j *Job) {
			j.Recipients = append(j.Recipients, Recipient{UserID: "u-1", Devices: []Device{{Platform: FCM, Token: "x"}}})
		}, []problem{{"recipients[2].user_id", "duplicate of recipients[0].user_id"}}},

		// timezone
		{"timezone empty means the default", func(j *Job) { j.Recipients[1].Timezone = "" }, nil},
		{"timezone UTC", func(j *Job) { j.Recipients[1].Timezone = "UTC" }, nil},
		{"timezone three levels", func(j *Job) { j.Recipients[1].Timezone = "America/Argentina/Buenos_Aires" }, nil},
		{"timezone Etc offset", func(j *Job) { j.Recipients[1].Timezone = "Etc/GMT+5" }, nil},
		{"timezone unknown", func(j *Job) { j.Recipients[1].Timezone = "Mars/Base" },
			[]problem{{"recipients[1].timezone", `unknown time zone "Mars/Base" (want an IANA name such as Europe/Berlin)`}}},
		{"timezone Local", func(j *Job) { j.Recipients[1].Timezone = "Local" },
			[]problem{{"recipients[1].timezone", `"Local" is the server machine's own zone, meaningless to a client (want an IANA name such as Europe/Berlin)`}}},
		{"timezone localtime", func(j *Job) { j.Recipients[1].Timezone = "localtime" },
			[]problem{{"recipients[1].timezone", `"localtime" is the server machine's own zone`}}},
		{"timezone posix/ only some machines have", func(j *Job) { j.Recipients[1].Timezone = "posix/Europe/Berlin" },
			[]problem{{"recipients[1].timezone", `unknown time zone "posix/Europe/Berlin"`}}},
		{"timezone right/ only some machines have", func(j *Job) { j.Recipients[1].Timezone = "right/UTC" },
			[]problem{{"recipients[1].timezone", `unknown time zone "right/UTC"`}}},
		{"timezone posixrules", func(j *Job) { j.Recipients[1].Timezone = "posixrules" },
			[]problem{{"recipients[1].timezone", `unknown time zone "posixrules"`}}},
		{"timezone a zoneinfo file that is not a zone", func(j *Job) { j.Recipients[1].Timezone = "zone.tab" },
			[]problem{{"recipients[1].timezone", `unknown time zone "zone.tab"`}}},
		{"timezone a path", func(j *Job) { j.Recipients[1].Timezone = "/etc/localtime" },
			[]problem{{"recipients[1].timezone", `unknown time zone "/etc/localtime"`}}},
		{"timezone climbing out", func(j *Job) { j.Recipients[1].Timezone = "../../../etc/passwd" },
			[]problem{{"recipients[1].timezone", `unknown time zone "../../../etc/passwd"`}}},
		{"timezone an offset", func(j *Job) { j.Recipients[1].Timezone = "+01:00" },
			[]problem{{"recipients[1].timezone", `unknown time zone "+01:00"`}}},
		{"the same bad timezone twice is reported twice", func(j *Job) {
			j.Recipients[0].Timezone = "Mars/Base"
			j.Recipients[1].Timezone = "Mars/Base"
		}, []problem{{"recipients[0].timezone", "Mars/Base"}, {"recipients[1].timezone", "Mars/Base"}}},

		// devices
		{"no devices", func(j *Job) { j.Recipients[1].Devices = nil }, []problem{{"recipients[1].devices", "at least one device"}}},
		{"10 devices", func(j *Job) { j.Recipients[1].Devices = devices(MaxDevices) }, nil},
		{"11 devices", func(j *Job) { j.Recipients[1].Devices = devices(MaxDevices + 1) }, []problem{{"recipients[1].devices", "11 devices, limit 10"}}},
		{"platform missing", func(j *Job) { j.Recipients[0].Devices[1].Platform = "" }, []problem{{"recipients[0].devices[1].platform", "required"}}},
		{"platform unknown", func(j *Job) { j.Recipients[0].Devices[1].Platform = "web" }, []problem{{"recipients[0].devices[1].platform", `unknown platform "web"`}}},
		{"token missing", func(j *Job) { j.Recipients[0].Devices[0].Token = "" }, []problem{{"recipients[0].devices[0].token", "required"}}},
		{"apns token not hex", func(j *Job) { j.Recipients[0].Devices[0].Token = "zz" + apnsToken[2:] }, []problem{{"recipients[0].devices[0].token", "not hex (invalid character at position 0)"}}},
		{"apns token as iOS describes it", func(j *Job) { j.Recipients[0].Devices[0].Token = "<" + apnsToken[:8] + " " + apnsToken[8:] + ">" }, []problem{{"recipients[0].devices[0].token", "not hex (invalid character at position 0): this looks like an old-style iOS token description; send only its hex digits, without <, > and spaces"}}},
		{"fcm token as an apns device", func(j *Job) { j.Recipients[0].Devices[0].Token = "fGx1:APA91bExampleRegistrationToken" }, []problem{{"recipients[0].devices[0].token", "not hex (invalid character at position 1): this looks like an FCM registration token; send it as an fcm device"}}},
		{"apns token 62 chars", func(j *Job) { j.Recipients[0].Devices[0].Token = apnsToken[:62] }, []problem{{"recipients[0].devices[0].token", "62 hex characters, want 64 to 200"}}},
		{"apns token 200 chars", func(j *Job) { j.Recipients[0].Devices[0].Token = strings.Repeat("0a", 100) }, nil},
		{"apns token 202 chars", func(j *Job) { j.Recipients[0].Devices[0].Token = strings.Repeat("0a", 101) }, []problem{{"recipients[0].devices[0].token", "202 hex characters"}}},
		{"apns token odd length", func(j *Job) { j.Recipients[0].Devices[0].Token = apnsToken + "a" }, []problem{{"recipients[0].devices[0].token", "odd number (65)"}}},
		{"apns token upper case hex", func(j *Job) { j.Recipients[0].Devices[0].Token = strings.ToUpper(apnsToken) }, nil},
		{"fcm token 4096 chars", func(j *Job) { j.Recipients[0].Devices[1].Token = strings.Repeat("t", 4096) }, nil},
		{"fcm token 4097 chars", func(j *Job) { j.Recipients[0].Devices[1].Token = strings.Repeat("t", 4097) }, []problem{{"recipients[0].devices[1].token", "4097 characters, limit 4096"}}},
		{"fcm token bad char", func(j *Job) { j.Recipients[0].Devices[1].Token = "abc def" }, []problem{{"recipients[0].devices[1].token", "invalid character at position 3"}}},
		{"unknown platform token only checked for presence", func(j *Job) {
			j.Recipients[0].Devices[1] = Device{Platform: "web", Token: "anything goes"}
		}, []problem{{"recipients[0].devices[1].platform", "unknown platform"}}},
		{"duplicate token", func(j *Job) {
			j.Recipients[1].Devices = append(j.Recipients[1].Devices, Device{Platform: APNs, Token: apnsToken2})
		}, []problem{{"recipients[1].devices[1].token", "duplicate of devices[0].token"}}},
		{"same token for two users is fine", func(j *Job) { j.Recipients[1].Devices[0].Token = apnsToken }, nil},

		// alert
		{"no alert and not silent", func(j *Job) { j.Alert = nil }, []problem{{"alert", "needs alert.title or alert.body"}}},
		{"alert with only sound", func(j *Job) { j.Alert = &Alert{Sound: "default"} }, []problem{{"alert", "needs alert.title or alert.body"}}},
		{"title only", func(j *Job) { j.Alert = &Alert{Title: "t"} }, nil},
		{"body only", func(j *Job) { j.Alert = &Alert{Body: "b"} }, nil},
		{"silent with alert", func(j *Job) { j.Silent = true }, []problem{{"alert", "must be absent when silent"}}},
		{"negative badge", func(j *Job) { j.Alert.Badge = intPtr(-1) }, []problem{{"alert.badge", "0 or more, got -1"}}},
		{"http image", func(j *Job) { j.Alert.Image = "http://x.example/i.png" }, []problem{{"alert.image", "https URL"}}},
		{"image not a URL", func(j *Job) { j.Alert.Image = "cat.png" }, []problem{{"alert.image", "https URL"}}},
		{"image without host", func(j *Job) { j.Alert.Image = "https:///i.png" }, []problem{{"alert.image", "https URL"}}},

		// data
		{"data empty key", func(j *Job) { j.Data[""] = "v" }, []problem{{`data[""]`, "empty key"}}},
		{"data aps", func(j *Job) { j.Data["aps"] = "v" }, []problem{{`data["aps"]`, "reserved"}}},
		{"data from", func(j *Job) { j.Data["from"] = "v" }, []problem{{`data["from"]`, "reserved by FCM"}}},
		{"data notification", func(j *Job) { j.Data["notification"] = "v" }, []problem{{`data["notification"]`, "reserved by FCM"}}},
		{"data message_type", func(j *Job) { j.Data["message_type"] = "v" }, []problem{{`data["message_type"]`, "reserved by FCM"}}},
		{"data google. prefix", func(j *Job) { j.Data["google.c.a"] = "v" }, []problem{{`data["google.c.a"]`, `"google."`}}},
		{"data gcm. prefix", func(j *Job) { j.Data["gcm.n.e"] = "v" }, []problem{{`data["gcm.n.e"]`, `"gcm."`}}},
		{"data googleish key is fine", func(j *Job) { j.Data["googleplay"] = "v" }, nil},
		{"data image without alert image is fine", func(j *Job) { j.Data["image"] = "v" }, nil},
		{"data image collides with alert image", func(j *Job) {
			j.Alert.Image = "https://x.example/i.png"
			j.Data["image"] = "v"
		}, []problem{{`data["image"]`, "collides with alert.image"}}},
		{"data problems in key order", func(j *Job) {
			j.Data["gcm.b"] = "v"
			j.Data["aps"] = "v"
		}, []problem{{`data["aps"]`, "reserved"}, {`data["gcm.b"]`, "reserved by FCM"}}},

		// priority, collapse_key
		{"priority normal", func(j *Job) { j.Priority = PriorityNormal }, nil},
		{"priority high", func(j *Job) { j.Priority = PriorityHigh }, nil},
		{"priority unknown", func(j *Job) { j.Priority = "urgent" }, []problem{{"priority", `unknown priority "urgent"`}}},
		{"priority wrong case", func(j *Job) { j.Priority = "High" }, []problem{{"priority", `unknown priority "High"`}}},
		{"collapse_key 65 bytes", func(j *Job) { j.CollapseKey = strings.Repeat("k", 65) }, []problem{{"collapse_key", "65 bytes, limit 64"}}},
		{"collapse_key with newline", func(j *Job) { j.CollapseKey = "score\nX-Injected: 1" }, []problem{{"collapse_key", "control character at byte 5"}}},
		{"collapse_key with NUL", func(j *Job) { j.CollapseKey = "a\x00" }, []problem{{"collapse_key", "control character at byte 1"}}},
		{"collapse_key with DEL", func(j *Job) { j.CollapseKey = "a\x7f" }, []problem{{"collapse_key", "control character"}}},
		{"collapse_key with tab", func(j *Job) { j.CollapseKey = "a\tb" }, []problem{{"collapse_key", "control character"}}},
		{"collapse_key invalid utf-8", func(j *Job) { j.CollapseKey = "a\xff" }, []problem{{"collapse_key", "not valid UTF-8"}}},
		{"collapse_key unicode and spaces are fine", func(j *Job) { j.CollapseKey = "Spielstand über alles" }, nil},

		// category
		{"app", func(j *Job) { j.App = "courier-eu_2" }, nil},
		{"app 32 characters", func(j *Job) { j.App = strings.Repeat("a", MaxAppBytes) }, nil},
		{"app too long", func(j *Job) { j.App = strings.Repeat("a", MaxAppBytes+1) },
			[]problem{{"app", "want 1 to 32 of a-z, 0-9, _ and -"}}},
		{"app with a colon", func(j *Job) { j.App = "a:b" }, []problem{{"app", `invalid app "a:b"`}}},
		{"category one character", func(j *Job) { j.Category = "a" }, nil},
		{"category 32 characters", func(j *Job) { j.Category = strings.Repeat("c", MaxCategoryBytes) }, nil},
		{"category with digits, _ and -", func(j *Job) { j.Category = "promo_2026-q4" }, nil},
		{"category differs from alert.category", func(j *Job) {
			j.Category = "orders"
			j.Alert.Category = "ORDER_ACTIONS"
		}, nil},
		{"category with space and capital", func(j *Job) { j.Category = "Mar keting" },
			[]problem{{"category", `invalid category "Mar keting": want 1 to 32 of a-z, 0-9, _ and -`}}},
		{"category upper case", func(j *Job) { j.Category = "MARKETING" }, []problem{{"category", `invalid category "MARKETING"`}}},
		{"category 33 characters", func(j *Job) { j.Category = strings.Repeat("c", MaxCategoryBytes+1) },
			[]problem{{"category", "want 1 to 32 of a-z, 0-9, _ and -"}}},
		{"category non-ASCII", func(j *Job) { j.Category = "café" }, []problem{{"category", `invalid category "café"`}}},
		{"category with a dot", func(j *Job) { j.Category = "a.b" }, []problem{{"category", `invalid category "a.b"`}}},

		// ttl, expires_at
		{"ttl 1s", func(j *Job) { j.TTL = Duration(time.Second) }, nil},
		{"ttl negative", func(j *Job) { j.TTL = Duration(-time.Hour) }, []problem{{"ttl", "must be positive"}}},
		{"ttl over 28 days", func(j *Job) { j.TTL = Duration(MaxTTL + time.Second) }, []problem{{"ttl", "longer than the limit of 672h0m0s"}}},
		{"expires_at in the future", func(j *Job) { j.ExpiresAt = at(time.Minute) }, nil},
		{"expires_at exactly now", func(j *Job) { j.ExpiresAt = at(0) }, nil},
		{"expires_at in the past", func(j *Job) { j.ExpiresAt = at(-time.Second) }, []problem{{"expires_at", "2026-11-21T17:59:59Z is in the past"}}},
		{"ttl and expires_at", func(j *Job) {
			j.TTL = Duration(time.Hour)
			j.ExpiresAt = at(time.Hour)
		}, []problem{{"expires_at", "cannot be combined with ttl"}}},

		// send_at
		{"send_at in the future", func(j *Job) { j.SendAt = at(time.Hour) }, nil},
		{"send_at exactly now", func(j *Job) { j.SendAt = at(0) }, nil},
		{"send_at at the limit", func(j *Job) { j.SendAt = at(MaxSendAhead) }, nil},
		{"send_at in the past", func(j *Job) { j.SendAt = at(-time.Second) },
			[]problem{{"send_at", "2026-11-21T17:59:59Z is in the past (now 2026-11-21T18:00:00Z)"}}},
		{"send_at past the limit", func(j *Job) { j.SendAt = at(MaxSendAhead + time.Second) },
			[]problem{{"send_at", "2026-12-19T18:00:01Z is more than the limit of 672h0m0s (28 days) ahead (now 2026-11-21T18:00:00Z)"}}},
		{"send_at in another offset keeps it", func(j *Job) {
			t := time.Date(2026, 11, 21, 18, 59, 0, 0, time.FixedZone("", 2*3600))
			j.SendAt = &t
		}, []problem{{"send_at", "2026-11-21T18:59:00+02:00 is in the past (now 2026-11-21T18:00:00Z)"}}},
		{"send_at with the longest ttl", func(j *Job) {
			j.SendAt = at(MaxSendAhead)
			j.TTL = Duration(MaxTTL)
		}, nil},
		{"send_at before expires_at", func(j *Job) {
			j.SendAt = at(time.Hour)
			j.ExpiresAt = at(time.Hour + time.Second)
		}, nil},
		{"expires_at equal to send_at", func(j *Job) {
			j.SendAt = at(time.Hour)
			j.ExpiresAt = at(time.Hour)
		}, []problem{{"expires_at", "2026-11-21T19:00:00Z is not after send_at (2026-11-21T19:00:00Z)"}}},
		{"expires_at before send_at", func(j *Job) {
			j.SendAt = at(2 * time.Hour)
			j.ExpiresAt = at(time.Hour)
		}, []problem{{"expires_at", "2026-11-21T19:00:00Z is not after send_at (2026-11-21T20:00:00Z)"}}},
		{"send_at and expires_at both in the past", func(j *Job) {
			j.SendAt = at(-2 * time.Hour)
			j.ExpiresAt = at(-time.Hour)
		}, []problem{{"send_at", "in the past"}, {"expires_at", "in the past"}}},
		{"expires_at in the past and before send_at", func(j *Job) {
			j.SendAt = at(time.Hour)
			j.ExpiresAt = at(-time.Hour)
		}, []problem{{"expires_at", "in the past"}, {"expires_at", "not after send_at"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := validJob()
			tc.mutate(&j)
			checkProblems(t, j.Validate(testNow), tc.want)
		})
	}
}

// TestValidateReportsEverything puts many problems in one job and expects all
// of them, in document order.
func TestValidateReportsEverything(t *testing.T) {
	j := Job{
		ID: "has space",
		Recipients: []Recipient{
			{UserID: "", Timezone: "Local", Devices: []Device{{Platform: "apns", Token: "nothex"}, {Platform: "sms", Token: "1"}}},
			{UserID: "u-1", Devices: nil},
			{UserID: "u-1", Devices: []Device{{Platform: FCM, Token: "a"}, {Platform: FCM, Token: "a"}}},
		},
		Content: Content{
			Alert:       &Alert{Badge: intPtr(-2), Image: "ftp://x"},
			Data:        map[string]string{"from": "x"},
			Priority:    "low",
			Category:    "Promo",
			CollapseKey: strings.Repeat("c", 100),
			SendAt:      at(-time.Minute),
			TTL:         Duration(time.Hour),
			ExpiresAt:   at(-time.Hour),
		},
	}
	checkProblems(t, j.Validate(testNow), []problem{
		{"id", "whitespace"},
		{"recipients[0].user_id", "required"},
		{"recipients[0].timezone", `"Local"`},
		{"recipients[0].devices[0].token", "not hex"},
		{"recipients[0].devices[1].platform", `unknown platform "sms"`},
		{"recipients[1].devices", "at least one device"},
		{"recipients[2].user_id", "duplicate of recipients[1].user_id"},
		{"recipients[2].devices[1].token", "duplicate of devices[0].token"},
		{"alert", "needs alert.title or alert.body"},
		{"alert.badge", "got -2"},
		{"alert.image", "https URL"},
		{`data["from"]`, "reserved by FCM"},
		{"priority", `"low"`},
		{"category", `"Promo"`},
		{"collapse_key", "100 bytes"},
		{"send_at", "in the past"},
		{"expires_at", "cannot be combined with ttl"},
		{"expires_at", "in the past"},
		{"expires_at", "not after send_at"},
	})
}

func TestValidatePayloadSize(t *testing.T) {
	onlyOn := func(p Platform, token string) []Recipient {
		return []Recipient{{UserID: "u", Devices: []Device{{Platform: p, Token: token}}}}
	}
	tests := []struct {
		name    string
		content func(t *testing.T) Content
		rcpt    []Recipient
		want    []problem
	}{
		{"apns 4096 bytes", func(t *testing.T) Content { return apnsBodyOfSize(t, 4096) }, onlyOn(APNs, apnsToken), nil},
		{"apns 4097 bytes", func(t *testing.T) Content { return apnsBodyOfSize(t, 4097) }, onlyOn(APNs, apnsToken),
			[]problem{{"alert", "rendered apns payload is 4097 bytes, limit 4096"}}},
		{"fcm 4096 bytes", func(t *testing.T) Content { return fcmMessageOfSize(t, 4096) }, onlyOn(FCM, fcmToken), nil},
		{"fcm 4097 bytes", func(t *testing.T) Content { return fcmMessageOfSize(t, 4097) }, onlyOn(FCM, fcmToken),
			[]problem{{"alert", "rendered fcm message is 4097 bytes, limit 4096"}}},
		// The FCM message of this content is larger than its APNs body: an
		// APNs-only job is not held to the FCM size.
		{"fcm size ignored without fcm devices", func(t *testing.T) Content {
			return Content{Alert: &Alert{Title: "t", Body: strings.Repeat("b", 2500)}}
		}, onlyOn(APNs, apnsToken), nil},
		{"same content with an fcm device", func(t *testing.T) Content {
			return Content{Alert: &Alert{Title: "t", Body: strings.Repeat("b", 2500)}}
		}, onlyOn(FCM, fcmToken), []problem{{"alert", "rendered fcm message is"}}},
		{"silent job names data", func(t *testing.T) Content {
			return Content{Silent: true, Data: map[string]string{"blob": strings.Repeat("x", 5000)}}
		}, onlyOn(APNs, apnsToken), []problem{{"data", "rendered apns payload is 5041 bytes"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := Job{Recipients: tc.rcpt, Content: tc.content(t)}
			checkProblems(t, j.Validate(testNow), tc.want)
		})
	}
}

func checkProblems(t *testing.T, err error, want []problem) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("Validate: %v, want no problems", err)
		}
		return
	}
	ve, ok := errors.AsType[*ValidationError](err)
	if !ok {
		t.Fatalf("Validate: %v (%T), want a *ValidationError", err, err)
	}
	var wantFields, gotFields []string
	for _, p := range want {
		wantFields = append(wantFields, p.field)
	}
	for _, p := range ve.Problems {
		gotFields = append(gotFields, p.Field)
	}
	if diff := cmp.Diff(wantFields, gotFields); diff != "" {
		t.Fatalf("problem fields (-want +got):\n%s\nerror: %v", diff, err)
	}
	for i, p := range want {
		if !strings.Contains(ve.Problems[i].Message, p.msg) {
			t.Errorf("problem %d: %q, want a message containing %q", i, ve.Problems[i].Error(), p.msg)
		}
	}
}

func TestValidationErrorText(t *testing.T) {
	err := (&Job{}).Validate(testNow)
	want := "invalid job: recipients: at least one recipient is required; alert: a job that is not silent needs alert.title or alert.body"
	if err == nil || err.Error() != want {
		t.Errorf("Error() = %v, want %q", err, want)
	}
	fe, ok := errors.AsType[FieldError](err)
	if !ok || fe.Field != "recipients" {
		t.Errorf("errors.AsType[FieldError] = %+v, %v; want the recipients problem", fe, ok)
	}
}

func TestValidCategory(t *testing.T) {
	for name, want := range map[string]bool{
		"marketing":             true,
		"a":                     true,
		"0":                     true,
		"_":                     true,
		"order-updates_2":       true,
		strings.Repeat("x", 32): true,
		"":                      false,
		strings.Repeat("x", 33): false,
		"Marketing":             false,
		"mar keting":            false,
		"news.letter":           false,
		"a/b":                   false,
		"ünicode":               false,
		"tab\t":                 false,
		strings.Repeat("é", 16): false, // 32 bytes, not a-z
	} {
		if got := ValidCategory(name); got != want {
			t.Errorf("ValidCategory(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestRecipientLocation(t *testing.T) {
	loc, err := Recipient{}.Location()
	if loc != nil || err != nil {
		t.Errorf("Location of no timezone = %v, %v; want nil, nil (the server's default)", loc, err)
	}
	loc, err = Recipient{Timezone: "Europe/Berlin"}.Location()
	if err != nil || loc == nil || loc.String() != "Europe/Berlin" {
		t.Fatalf("Location(Europe/Berlin) = %v, %v", loc, err)
	}
	// Quiet hours need the zone's rules, not a fixed offset.
	summer, winter := time.Date(2026, 7, 1, 12, 0, 0, 0, loc), time.Date(2026, 1, 1, 12, 0, 0, 0, loc)
	if _, s := summer.Zone(); s != 2*3600 {
		t.Errorf("Europe/Berlin in July is UTC%+d s, want +7200", s)
	}
	if _, w := winter.Zone(); w != 3600 {
		t.Errorf("Europe/Berlin in January is UTC%+d s, want +3600", w)
	}
	for _, bad := range []string{"Local", "Mars/Base"} {
		loc, err := Recipient{Timezone: bad}.Location()
		if loc != nil || err == nil || !strings.Contains(err.Error(), "IANA") {
			t.Errorf("Location(%q) = %v, %v; want nil and an error asking for an IANA name", bad, loc, err)
		}
	}
}
