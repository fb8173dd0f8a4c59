package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/hushpush/hush/internal/testkit"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/wire"
	"github.com/hushpush/hush/worker"
)

// repeated is prefix, then item repeated (comma-separated) while the whole
// stays under n bytes, then suffix.
func repeated(n int, prefix, item, suffix string) string {
	var b strings.Builder
	b.WriteString(prefix)
	for k := 0; b.Len()+len(item)+1+len(suffix) < n; k++ {
		if k > 0 {
			b.WriteByte(',')
		}
		b.WriteString(item)
	}
	b.WriteString(suffix)
	return b.String()
}

// post sends body and returns the status, the answer, and the bytes the
// process allocated meanwhile (server and client are both in this test).
func post(t *testing.T, srv *httptest.Server, path, body string) (int, []byte, uint64) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	resp, err := srv.Client().Post(srv.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	return resp.StatusCode, b, after.TotalAlloc - before.TotalAlloc
}

// TestAPIBadRequestBounded: a body of the default limit made of empty
// recipients, one job or a batch of them, is answered with at most
// payload.MaxProblems problems per job and a count of the others, in an
// answer and at a memory cost bounded by the body's size. The cost of a
// batch is mostly garbage: encoding/json's growing of each job's
// recipients (a 3-byte "{}," becomes a 56-byte Recipient), dropped job by
// job.
func TestAPIBadRequestBounded(t *testing.T) {
	testkit.Slow(t, "posts 8 MB bodies and measures their memory")
	srv := newEnv(t, envOptions{noRun: true}).server()
	const size = DefaultMaxBodyBytes - 1024

	t.Run("one job", func(t *testing.T) {
		status, b, alloc := post(t, srv, "/v1/notifications", repeated(size, `{"recipients":[`, `{}`, `]}`))
		if status != http.StatusBadRequest {
			t.Fatalf("status %d, want 400: %.300s", status, b)
		}
		var env wire.ErrorBody
		if err := json.Unmarshal(b, &env); err != nil {
			t.Fatal(err)
		}
		if n := len(env.Error.Problems); n == 0 || n > payload.MaxProblems {
			t.Errorf("%d problems listed, want 1 to %d", n, payload.MaxProblems)
		}
		if len(b) > 64<<10 {
			t.Errorf("answer of %d KiB, want at most 64 KiB", len(b)>>10)
		}
		if limit := uint64(16 * size); alloc > limit {
			t.Errorf("the request allocated %d MiB, want at most %d MiB", alloc>>20, limit>>20)
		}
	})
	t.Run("batch", func(t *testing.T) {
		job := repeated(size/worker.MaxBatch, `{"recipients":[`, `{}`, `]}`)
		status, b, alloc := post(t, srv, "/v1/notifications:batch", repeated(size, `{"jobs":[`, job, `]}`))
		if status != http.StatusOK {
			t.Fatalf("status %d, want 200: %.300s", status, b)
		}
		var got wire.BatchResults
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		for i, a := range got.Results {
			if a.Error == nil || len(a.Error.Problems) > payload.MaxProblems || a.Error.Omitted == 0 {
				t.Fatalf("answer %d: %+v, want at most %d problems listed and the others counted", i, a, payload.MaxProblems)
			}
		}
		if limit := worker.MaxBatch * payload.MaxProblems * 128; len(b) > limit {
			t.Errorf("answer of %d KiB, want at most %d KiB", len(b)>>10, limit>>10)
		}
		if limit := uint64(128 * size); alloc > limit {
			t.Errorf("the request allocated %d MiB, want at most %d MiB", alloc>>20, limit>>20)
		}
	})
}

// TestAPIBatchEnvelopeStrict: the batch envelope is read as strictly as a
// job: trailing data, a repeated "jobs" and another spelling of it are
// refused, and no job of such a body is queued.
func TestAPIBatchEnvelopeStrict(t *testing.T) {
	srv := newEnv(t, envOptions{noRun: true}).server()
	job := func(id string) string {
		b, err := json.Marshal(alertJob(id, "hi", apnsRecipient("u-"+id, apnsToken(id))))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, tc := range []struct {
		name      string
		body      string
		ids       []string // none of them may be queued
		wantField string   // the problem's field, or "" for malformed JSON
	}{
		{"trailing garbage", `{"jobs":[` + job("trail") + `]}garbage`, []string{"trail"}, ""},
		{"trailing brace", `{"jobs":[` + job("brace") + `]}}`, []string{"brace"}, ""},
		{"trailing bracket", `{"jobs":[` + job("bracket") + `]}]`, []string{"bracket"}, ""},
		{"a second object", `{"jobs":[` + job("second-a") + `]} {"jobs":[` + job("second-b") + `]}`, []string{"second-a", "second-b"}, ""},
		{"jobs given twice", `{"jobs":[` + job("dup-a") + `],"jobs":[` + job("dup-b") + `]}`, []string{"dup-a", "dup-b"}, "jobs"},
		{"JOBS", `{"JOBS":[` + job("upper") + `]}`, []string{"upper"}, "JOBS"},
		{"jobs not an array", `{"jobs":{"id":"x"}}`, nil, "jobs"},
		{"too many jobs", `{"jobs":[` + strings.Repeat(`{},`, worker.MaxBatch) + `{}]}`, nil, "jobs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := call(t, srv, http.MethodPost, "/v1/notifications:batch", "", tc.body)
			if got.Status != http.StatusBadRequest {
				t.Fatalf("status %d (%v), want 400", got.Status, got.Body)
			}
			if fs := fields(got); tc.wantField != "" && (len(fs) != 1 || fs[0] != tc.wantField) {
				t.Errorf("problem fields %q, want [%q]; answer %v", fs, tc.wantField, got.Body)
			}
			for _, id := range tc.ids {
				if st := call(t, srv, http.MethodGet, "/v1/notifications/"+id, "", ""); st.Status != http.StatusNotFound {
					t.Errorf("job %s of a refused batch: status %d (%v), want 404", id, st.Status, st.Body)
				}
			}
		})
	}
}
