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
// documented kinds, no answer lists more than MaxProblems problems, and a
// decoded job survives Marshal and Decode unchanged. testdata/fuzz holds
// the hostile jobs of the API's edge cases as seeds.
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
			ve, isValidation := errors.AsType[*ValidationError](err)
			if !isValidation && !errors.Is(err, ErrMalformed) {
				t.Fatalf("Decode: %v (%T), want a *ValidationError or ErrMalformed", err, err)
			}
			checkBounded(t, ve)
			return
		}
		if err := job.Validate(testNow); err != nil {
			ve, ok := errors.AsType[*ValidationError](err)
			if !ok {
				t.Fatalf("Validate: %v (%T), want a *ValidationError", err, err)
			}
			checkBounded(t, ve)
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

// checkBounded fails when ve (nil: none) lists more than MaxProblems
// problems or a problem without its field.
func checkBounded(t *testing.T, ve *ValidationError) {
	t.Helper()
	if ve == nil {
		return
	}
	if len(ve.Problems) == 0 || len(ve.Problems) > MaxProblems || ve.Omitted < 0 {
		t.Fatalf("%d problems listed, %d omitted; want 1 to %d listed", len(ve.Problems), ve.Omitted, MaxProblems)
	}
	for _, p := range ve.Problems {
		if p.Message == "" {
			t.Fatalf("problem %+v without a message", p)
		}
	}
}

// FuzzDecodeBatch feeds arbitrary input to DecodeBatch: it may not panic,
// its errors are of the documented kinds with at most MaxProblems
// problems, and what it accepts is 1 to MaxBatchJobs jobs, each one JSON
// value that Decode answers without panicking. testdata/fuzz holds the
// loose envelopes the endpoint once accepted as seeds.
func FuzzDecodeBatch(f *testing.F) {
	for _, seed := range []string{
		`{"jobs":[` + fullJobJSON + `]}`,
		`{"jobs":[{}]}`,
		`{"jobs":[]}`,
		`{"jobs":{}}`,
		`{"jobs":null}`,
		`[]`,
		``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		raws, err := DecodeBatch(bytes.NewReader(in))
		if err != nil {
			ve, isValidation := errors.AsType[*ValidationError](err)
			if !isValidation && !errors.Is(err, ErrMalformed) {
				t.Fatalf("DecodeBatch: %v (%T), want a *ValidationError or ErrMalformed", err, err)
			}
			checkBounded(t, ve)
			return
		}
		if n := len(raws); n == 0 || n > MaxBatchJobs {
			t.Fatalf("DecodeBatch accepted %d jobs, want 1 to %d", n, MaxBatchJobs)
		}
		for _, raw := range raws {
			if !json.Valid(raw) {
				t.Fatalf("job %q is not one JSON value", raw)
			}
			if _, err := Decode(bytes.NewReader(raw)); err != nil {
				ve, _ := errors.AsType[*ValidationError](err)
				checkBounded(t, ve)
			}
		}
	})
}
