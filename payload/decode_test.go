package payload

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

const fullJobJSON = `{
  "id": "order-4711-shipped",
  "recipients": [
    {"user_id": "u-42", "timezone": "Europe/Berlin",
     "devices": [{"platform": "apns", "token": "abababababababababababababababababababababababababababababababab"},
                 {"platform": "fcm",  "token": "fGx1:APA91b_token-Example.1"}]}
  ],
  "alert":  {"title": "Shipped", "body": "On its way", "sound": "default", "badge": 3,
             "image": "https://cdn.example.com/p.jpg", "category": "ORDER", "thread_id": "orders"},
  "data":   {"order": "4711"},
  "priority": "high",
  "category": "orders",
  "collapse_key": "order-4711",
  "send_at": "2026-11-21T19:30:00+01:00",
  "ttl": "2h",
  "silent": false
}`

func TestDecodeFullJob(t *testing.T) {
	got, err := Decode(strings.NewReader(fullJobJSON))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	want := Job{
		ID: "order-4711-shipped",
		Recipients: []Recipient{{UserID: "u-42", Timezone: "Europe/Berlin", Devices: []Device{
			{Platform: APNs, Token: apnsToken},
			{Platform: FCM, Token: fcmToken},
		}}},
		Content: Content{
			Alert: &Alert{Title: "Shipped", Body: "On its way", Sound: "default", Badge: intPtr(3),
				Image: "https://cdn.example.com/p.jpg", Category: "ORDER", ThreadID: "orders"},
			Data:        map[string]string{"order": "4711"},
			Priority:    PriorityHigh,
			Category:    "orders",
			CollapseKey: "order-4711",
			SendAt:      at(30 * time.Minute),
			TTL:         Duration(2 * time.Hour),
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Decode (-want +got):\n%s", diff)
	}
	if err := got.Validate(testNow); err != nil {
		t.Errorf("Validate: %v", err)
	}
	got.AcceptedAt = time.Date(2026, 11, 21, 17, 0, 0, 0, time.UTC) // as hush stamps it
	if d := got.Deadline(); !d.Equal(got.SendAt.Add(2 * time.Hour)) {
		t.Errorf("Deadline = %v, want send_at + 2h", d)
	}
}

func TestDecodeRoundTrip(t *testing.T) {
	tests := map[string]string{
		"full":       fullJobJSON,
		"expires_at": `{"recipients":[{"user_id":"u","devices":[{"platform":"fcm","token":"t"}]}],"alert":{"body":"b"},"expires_at":"2026-11-21T19:30:00+01:00"}`,
		"send_at":    `{"recipients":[{"user_id":"u","devices":[{"platform":"fcm","token":"t"}]}],"alert":{"body":"b"},"send_at":"2026-11-21T19:30:00.5+01:00","expires_at":"2026-11-22T00:00:00Z"}`,
		"silent":     `{"recipients":[{"user_id":"u","devices":[{"platform":"fcm","token":"t"}]}],"silent":true,"data":{"k":"v"},"ttl":"90s"}`,
		"badge zero": `{"recipients":[],"alert":{"title":"t","badge":0}}`,
		"minimal":    `{"recipients":[]}`,
	}
	for name, in := range tests {
		t.Run(name, func(t *testing.T) {
			first, err := Decode(strings.NewReader(in))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			out, err := json.Marshal(first)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			second, err := Decode(strings.NewReader(string(out)))
			if err != nil {
				t.Fatalf("Decode of %s: %v", out, err)
			}
			if diff := cmp.Diff(first, second); diff != "" {
				t.Errorf("round trip through %s (-first +second):\n%s", out, diff)
			}
		})
	}
}

func TestDurationJSON(t *testing.T) {
	b, err := json.Marshal(Duration(90 * time.Minute))
	if err != nil || string(b) != `"1h30m0s"` {
		t.Errorf("Marshal(90m) = %s, %v; want \"1h30m0s\"", b, err)
	}
	var d Duration
	if err := json.Unmarshal([]byte(`"2h"`), &d); err != nil || d != Duration(2*time.Hour) {
		t.Errorf("Unmarshal(\"2h\") = %v, %v", time.Duration(d), err)
	}
	for _, bad := range []string{`3600`, `"2 hours"`, `""`, `true`} {
		if err := json.Unmarshal([]byte(bad), &d); err == nil {
			t.Errorf("Unmarshal(%s) succeeded, want an error", bad)
		}
	}
}

func TestDecodeFieldProblems(t *testing.T) {
	const dev = `{"platform":"fcm","token":"t"}`
	tests := []struct {
		name string
		in   string
		want []problem
	}{
		{"unknown top-level field", `{"recipients":[],"sound":"x"}`, []problem{{"sound", "unknown field"}}},
		{"unknown nested field",
			`{"recipients":[{"user_id":"u","devices":[` + dev + `,{"platfrom":"apns","token":"t"}]}]}`,
			[]problem{{"recipients[0].devices[1].platfrom", "unknown field"}}},
		{"unknown alert field", `{"alert":{"titel":"x"}}`, []problem{{"alert.titel", "unknown field"}}},
		{"wrong case suggests the name", `{"recipients":[{"User_ID":"u"}]}`, []problem{{"recipients[0].User_ID", `did you mean "user_id"?`}}},
		{"odd field name is quoted", `{"a b":1}`, []problem{{`"a b"`, "unknown field"}}},
		{"duplicate field", `{"id":"a","id":"b"}`, []problem{{"id", "duplicate field"}}},
		{"duplicate data key", `{"data":{"k":"1","k":"2"}}`, []problem{{`data["k"]`, "duplicate key"}}},
		{"recipients not an array", `{"recipients":{"user_id":"u"}}`, []problem{{"recipients", "must be an array, not an object"}}},
		{"device not an object", `{"recipients":[{"user_id":"u","devices":["tok"]}]}`, []problem{{"recipients[0].devices[0]", "must be an object, not a string"}}},
		{"platform a number", `{"recipients":[{"user_id":"u","devices":[{"platform":1,"token":"t"}]}]}`, []problem{{"recipients[0].devices[0].platform", "must be a string, not the number 1"}}},
		{"badge a string", `{"alert":{"badge":"3"}}`, []problem{{"alert.badge", "must be an integer, not a string"}}},
		{"badge a fraction", `{"alert":{"badge":1.5}}`, []problem{{"alert.badge", "must be an integer, not the number 1.5"}}},
		{"silent a string", `{"silent":"yes"}`, []problem{{"silent", "must be true or false, not a string"}}},
		{"badge too large", `{"alert":{"badge":1e400}}`, []problem{{"alert.badge", "must be an integer, not the number 1e400"}}},
		{"badge overflows int", `{"alert":{"badge":99999999999999999999}}`, []problem{{"alert.badge", "must be an integer"}}},
		{"user_id a boolean", `{"recipients":[{"user_id":true}]}`, []problem{{"recipients[0].user_id", "must be a string, not a boolean"}}},
		{"token an object", `{"recipients":[{"devices":[{"token":{"a":[1,{}]}}],"user_id":"u"}]}`, []problem{{"recipients[0].devices[0].token", "must be a string, not an object"}}},
		{"data value a number", `{"data":{"n":1}}`, []problem{{`data["n"]`, "must be a string, not the number 1"}}},
		{"ttl a number", `{"ttl":3600}`, []problem{{"ttl", `must be a duration string like "2h", not 3600`}}},
		{"ttl not a duration", `{"ttl":"2 hours"}`, []problem{{"ttl", `invalid duration "2 hours"`}}},
		{"expires_at not a time", `{"expires_at":"tomorrow"}`, []problem{{"expires_at", "RFC 3339"}}},
		{"send_at not a time", `{"send_at":"tomorrow 9am"}`, []problem{{"send_at", `must be an RFC 3339 time like "2026-11-21T18:00:00Z"`}}},
		{"send_at a number", `{"send_at":1763748000}`, []problem{{"send_at", "RFC 3339"}}},
		{"send_at without an offset", `{"send_at":"2026-11-21T18:00:00"}`, []problem{{"send_at", "RFC 3339"}}},
		{"category a number", `{"category":7}`, []problem{{"category", "must be a string, not the number 7"}}},
		{"timezone an object", `{"recipients":[{"user_id":"u","timezone":{"name":"UTC"}}]}`, []problem{{"recipients[0].timezone", "must be a string, not an object"}}},
		{"timezone wrong case suggests the name", `{"recipients":[{"user_id":"u","timeZone":"UTC"}]}`, []problem{{"recipients[0].timeZone", `did you mean "timezone"?`}}},
		{"send_at wrong case suggests the name", `{"Send_At":"2026-11-21T18:00:00Z"}`, []problem{{"Send_At", `did you mean "send_at"?`}}},
		{"sendAt is unknown", `{"sendAt":"2026-11-21T18:00:00Z"}`, []problem{{"sendAt", "unknown field"}}},
		{"accepted_at a number", `{"accepted_at":1}`, []problem{{"accepted_at", "RFC 3339"}}},
		{"wrong container is skipped whole", `{"alert":[{"x":[1]}],"ttl":5}`, []problem{{"alert", "must be an object, not an array"}, {"ttl", "duration string"}}},
		{"all problems in document order",
			`{"zzz":1,"recipients":[{"user_id":7,"devices":[{"platform":"apns","tokn":"t"}]}],"alert":{"badge":"x"},"ttl":"soon","extra":{}}`,
			[]problem{
				{"zzz", "unknown field"},
				{"recipients[0].user_id", "must be a string"},
				{"recipients[0].devices[0].tokn", "unknown field"},
				{"alert.badge", "must be an integer"},
				{"ttl", "invalid duration"},
				{"extra", "unknown field"},
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(strings.NewReader(tc.in))
			if errors.Is(err, ErrMalformed) {
				t.Fatalf("Decode: %v, want field problems, not ErrMalformed", err)
			}
			checkProblems(t, err, tc.want)
		})
	}
}

func TestDecodeNullsAreZero(t *testing.T) {
	got, err := Decode(strings.NewReader(`{"id":null,"recipients":null,"alert":null,"data":null,"category":null,"send_at":null,"ttl":null,"expires_at":null,"silent":null}`))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if diff := cmp.Diff(Job{}, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Decode (-want +got):\n%s", diff)
	}
}

func TestDecodeMalformed(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", "empty input"},
		{"whitespace", "  \n", "empty input"},
		{"array", `[{"id":"a"}]`, "a job is a JSON object, not an array"},
		{"string", `"job"`, "not a string"},
		{"truncated", `{"id":"a",`, "unexpected end of input"},
		{"syntax error", `{"id":"a" "recipients":[]}`, "at offset 10"},
		{"bad literal", `{"silent":tru}`, "at offset"},
		{"trailing object", `{"id":"a"} {"id":"b"}`, "trailing data after the job, which ends at offset 10"},
		{"trailing garbage", `{"id":"a"}x`, "trailing data"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(strings.NewReader(tc.in))
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("Decode: %v, want ErrMalformed", err)
			}
			if _, ok := errors.AsType[*ValidationError](err); ok {
				t.Errorf("Decode: %v is also a *ValidationError", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Decode: %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestDecodeReadError(t *testing.T) {
	boom := errors.New("boom")
	_, err := Decode(iotest.ErrReader(boom))
	if !errors.Is(err, boom) {
		t.Errorf("Decode: %v, want it to wrap the reader's error", err)
	}
}

func TestDeadline(t *testing.T) {
	accepted := testNow
	tests := []struct {
		name string
		job  Job
		want time.Time
	}{
		{"no expiry", Job{AcceptedAt: accepted}, time.Time{}},
		{"expires_at", Job{Content: Content{ExpiresAt: at(time.Hour)}, AcceptedAt: accepted}, testNow.Add(time.Hour)},
		{"ttl from accepted_at", Job{Content: Content{TTL: Duration(time.Minute)}, AcceptedAt: accepted}, testNow.Add(time.Minute)},
		{"ttl before acceptance", Job{Content: Content{TTL: Duration(time.Minute)}}, time.Time{}},
		{"send_at alone", Job{Content: Content{SendAt: at(2 * time.Hour)}, AcceptedAt: accepted}, time.Time{}},
		{"ttl from send_at", Job{Content: Content{SendAt: at(2 * time.Hour), TTL: Duration(time.Minute)}, AcceptedAt: accepted}, testNow.Add(2*time.Hour + time.Minute)},
		{"ttl from send_at before acceptance", Job{Content: Content{SendAt: at(2 * time.Hour), TTL: Duration(time.Minute)}}, testNow.Add(2*time.Hour + time.Minute)},
		{"expires_at wins over send_at", Job{Content: Content{SendAt: at(2 * time.Hour), ExpiresAt: at(3 * time.Hour)}, AcceptedAt: accepted}, testNow.Add(3 * time.Hour)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.job.Deadline(); !got.Equal(tc.want) {
				t.Errorf("Deadline = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNotBefore(t *testing.T) {
	if got := (&Content{}).NotBefore(); !got.IsZero() {
		t.Errorf("NotBefore without send_at = %v, want the zero time", got)
	}
	c := Content{SendAt: at(time.Hour)}
	if got := c.NotBefore(); !got.Equal(testNow.Add(time.Hour)) {
		t.Errorf("NotBefore = %v, want send_at %v", got, testNow.Add(time.Hour))
	}
}
