package payload

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// badBodyBytes is the size of the hostile bodies below: the server's
// default body limit (httpapi.DefaultMaxBodyBytes).
const badBodyBytes = 8 << 20

// repeatTo is prefix, then item repeated (separated by commas) while the
// whole stays under n bytes, then suffix.
func repeatTo(n int, prefix, item, suffix string) []byte {
	var b bytes.Buffer
	b.WriteString(prefix)
	for k := 0; b.Len()+len(item)+1+len(suffix) < n; k++ {
		if k > 0 {
			b.WriteByte(',')
		}
		b.WriteString(item)
	}
	b.WriteString(suffix)
	return b.Bytes()
}

// allocated is the bytes allocated while f runs, and those still in use
// after it returns (what its result holds on to).
func allocated(f func()) (total, retained int64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	total = int64(after.TotalAlloc - before.TotalAlloc)
	runtime.GC()
	runtime.ReadMemStats(&after)
	return total, int64(after.HeapAlloc) - int64(before.HeapAlloc)
}

// TestBadJobBounded decodes and validates bodies of the server's largest
// size made of one problem repeated: the problems listed stay at
// MaxProblems with the rest counted, the answer holds on to less than a
// MiB, and what reading it allocates on the way (garbage, mostly the
// tokens of encoding/json's Decoder) stays a bounded multiple of its size.
func TestBadJobBounded(t *testing.T) {
	for _, tc := range []struct {
		name string
		body []byte
	}{
		{"empty recipients", repeatTo(badBodyBytes, `{"recipients":[`, `{}`, `]}`)},
		{"recipients without user_id", repeatTo(badBodyBytes, `{"recipients":[`, `{"user_id":""}`, `]}`)},
		{"empty devices", repeatTo(badBodyBytes, `{"recipients":[{"user_id":"u","devices":[`, `{}`, `]}]}`)},
		{"unknown fields", repeatTo(badBodyBytes/8, `{`, `"x":0`, `}`)},
		{"wrong types", repeatTo(badBodyBytes/8, `{"recipients":[{"user_id":"u","devices":[{"platform":"fcm","token":"t"}]}],"alert":{"title":"t"},"data":{`, `"k":0`, `}}`)},
		{"data keys", []byte(fmt.Sprintf(`{"recipients":[{"user_id":"u","devices":[{"platform":"fcm","token":"t"}]}],"alert":{"title":"t"},"data":{%s}}`, dataKeys(200000)))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			total, retained := allocated(func() {
				var job Job
				job, err = Decode(bytes.NewReader(tc.body))
				if err == nil {
					err = job.Validate(testNow)
				}
			})
			ve, ok := errors.AsType[*ValidationError](err)
			if !ok {
				t.Fatalf("err = %v, want a *ValidationError", err)
			}
			if len(ve.Problems) > MaxProblems {
				t.Errorf("%d problems listed, want at most %d", len(ve.Problems), MaxProblems)
			}
			if msg := ve.Error(); len(msg) > 64<<10 {
				t.Errorf("error text is %d bytes, want at most 64 KiB", len(msg))
			}
			if retained > 1<<20 {
				t.Errorf("the answer holds %d KiB, want at most 1 MiB", retained>>10)
			}
			if limit := int64(64 * len(tc.body)); total > limit {
				t.Errorf("allocated %d MiB for a %d MiB body, want at most %d MiB", total>>20, len(tc.body)>>20, limit>>20)
			}
			runtime.KeepAlive(err)
		})
	}
}

func dataKeys(n int) string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf(`"k%d":""`, i)
	}
	return strings.Join(keys, ",")
}

// TestValidateCountsOmitted: a job built in Go, past the decoder's limits,
// lists MaxProblems problems and counts the others.
func TestValidateCountsOmitted(t *testing.T) {
	job := Job{Recipients: make([]Recipient, 3*MaxProblems), Content: Content{Silent: true}}
	err := job.Validate(testNow)
	ve, ok := errors.AsType[*ValidationError](err)
	if !ok {
		t.Fatalf("err = %v, want a *ValidationError", err)
	}
	// Each recipient has two problems: no user_id, no devices.
	if got, want := len(ve.Problems), MaxProblems; got != want {
		t.Errorf("listed %d problems, want %d", got, want)
	}
	if got, want := ve.Omitted, 2*3*MaxProblems-MaxProblems; got != want {
		t.Errorf("Omitted = %d, want %d", got, want)
	}
	if !strings.HasSuffix(err.Error(), fmt.Sprintf("; and %d more problems", ve.Omitted)) {
		t.Errorf("error text %.100q... does not end with the count of the others", err.Error()[len(err.Error())-100:])
	}
}

// TestValidateStopsAtLimits: recipients past MaxRecipients are not checked
// one by one.
func TestValidateStopsAtLimits(t *testing.T) {
	job := Job{Recipients: make([]Recipient, 100*MaxRecipients), Content: Content{Silent: true}}
	var err error
	total, _ := allocated(func() { err = job.Validate(testNow) })
	if err == nil {
		t.Fatal("Validate accepted 1,000,000 empty recipients")
	}
	if total > 16<<20 {
		t.Errorf("Validate allocated %d MiB for 1,000,000 recipients, want at most 16 MiB", total>>20)
	}
}
