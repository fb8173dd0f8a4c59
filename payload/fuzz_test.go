package payload

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// FuzzDecodeValidate feeds arbitrary input to Decode and, when it decodes,
// to Validate and both renderers: none may panic, Decode's errors are of the
// documented kinds, and a decoded job survives Marshal and Decode unchanged.
func FuzzDecodeValidate(f *testing.F) {
	for _, seed := range []string{
		fullJobJSON,
		`{"recipients":[{"user_id":"u","devices":[{"platform":"fcm","token":"t"}]}],"silent":true,"data":{"k":"v"},"ttl":"90s"}`,
		`{"recipients":[{"user_id":"u","devices":[{"platform":"apns","token":"zz"}]}],"alert":{"badge":-1,"image":"http://x"},"expires_at":"2020-01-01T00:00:00Z","ttl":"1h"}`,
		`{"recipients":{},"alert":[1,{"a":[]}],"data":{"aps":"x","google.a":"y","":"z"},"priority":"urgent"}`,
		`{"recipients":[{"user_id":"u","timezone":"Mars/Base","devices":[{"platform":"fcm","token":"t"}]},{"user_id":"v","timezone":"Local","devices":[{"platform":"fcm","token":"t"}]}],"alert":{"title":"t"},"category":"Mar keting","send_at":"2026-11-21T19:00:00Z","expires_at":"2026-11-21T18:30:00Z"}`,
		`{"recipients":[{"user_id":"u","timezone":"Europe/Berlin","devices":[{"platform":"apns","token":"ab"}]}],"alert":{"body":"b"},"category":"orders","send_at":"2099-01-01T00:00:00+14:00","ttl":"672h"}`,
		`{"category":7,"send_at":"soon","recipients":[{"timezone":["UTC"],"TimeZone":"UTC"}]}`,
		`{"id":"a","id":"b","User_ID":1,"ttl":3600}`,
		`{"id":"a"} {"id":"b"}`,
		`{"silent":tru}`,
		`[]`,
		``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		job, err := Decode(bytes.NewReader(in))
		if err != nil {
			_, isValidation := errors.AsType[*ValidationError](err)
			if !isValidation && !errors.Is(err, ErrMalformed) {
				t.Fatalf("Decode: %v (%T), want a *ValidationError or ErrMalformed", err, err)
			}
			return
		}
		if err := job.Validate(testNow); err != nil {
			if _, ok := errors.AsType[*ValidationError](err); !ok {
				t.Fatalf("Validate: %v (%T), want a *ValidationError", err, err)
			}
		}
		_, _ = RenderAPNs(&job.Content)
		_, _ = RenderFCM(&job.Content)
		_ = job.Deadline()

		out, err := json.Marshal(job)
		if err != nil {
			t.Fatalf("Marshal of a decoded job: %v", err)
		}
		again, err := Decode(bytes.NewReader(out))
		if err != nil {
			t.Fatalf("Decode of %s: %v", out, err)
		}
		if diff := cmp.Diff(job, again, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("round trip through %s (-first +second):\n%s", out, diff)
		}
	})
}
