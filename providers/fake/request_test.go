package fake

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// TestAnsweredOnlyWhenTheClientGotIt: a request whose client went away
// before the (slow) answer is recorded with a zero Answered and is not a
// push; one answered to a waiting client is.
func TestAnsweredOnlyWhenTheClientGotIt(t *testing.T) {
	rec := newRecorder()
	rec.script("slow", []Answer{OK().WithLatency(5 * time.Second)})
	var handlers sync.WaitGroup
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handlers.Add(1)
		defer handlers.Done()
		a, tk := rec.take(Request{Token: r.URL.Path[1:], At: time.Now()}, func(Answer) int { return http.StatusOK })
		if a.begin(w, r) {
			defer rec.answered(tk, w, r)
			w.WriteHeader(http.StatusOK)
		}
	}))
	t.Cleanup(srv.Close)

	resp, err := http.Get(srv.URL + "/quick")
	if err != nil {
		t.Fatal(err)
	}
	// Read to the end, as the SDK clients do: closing the body after the
	// flushed headers closes the connection, and the handler could see its
	// client gone before it looks (seen once in CI).
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/slow", nil)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("the slow request was answered within 100ms")
	}
	srv.Close() // waits for the handlers
	handlers.Wait()

	got := map[string]Request{}
	for _, r := range rec.requests() {
		got[r.Token] = r
	}
	if q := got["quick"]; q.Answered.IsZero() || q.Answered.Before(q.At) || !q.Pushed() {
		t.Errorf("quick: %+v, want answered after it arrived, and a push", q)
	}
	if s, ok := got["slow"]; !ok || !s.Answered.IsZero() || s.Pushed() {
		t.Errorf("slow (client gone): recorded %v, %+v; want recorded, not answered, not a push", ok, s)
	}
}
