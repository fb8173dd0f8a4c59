package client_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hushpush/hush/client"
	"github.com/hushpush/hush/payload"
)

// TestSubmitBatch submits a batch to the real handler: a new job, an
// invalid one and a duplicate each get their own answer, in order, and the
// accepted job is there to read.
func TestSubmitBatch(t *testing.T) {
	a := startAPI(t)
	c := client.New(a.srv.URL, client.WithToken(token))
	ctx := t.Context()
	invalid := job("b-bad", "u-2")
	invalid.Recipients[0].Devices[0].Token = "zz"
	got, err := c.SubmitBatch(ctx, []payload.Job{job("b-1", "u-1"), invalid, job("b-1", "u-1")})
	if err != nil {
		t.Fatal(err)
	}
	want := []client.BatchAnswer{
		{Status: 202, Accepted: client.Accepted{ID: "b-1"}},
		{Status: 400, Err: &client.Error{Status: 400, Message: "invalid job", Problems: []client.Problem{{Field: "recipients[0].devices[0].token"}}}},
		{Status: 200, Accepted: client.Accepted{ID: "b-1", Duplicate: true}},
	}
	for _, a := range got {
		if a.Err != nil {
			for i := range a.Err.Problems {
				a.Err.Problems[i].Message = "" // the fields are checked, not the wording
			}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
	if st, err := c.Status(ctx, "b-1"); err != nil || st.State != client.StateQueued {
		t.Errorf("status of the accepted job: %+v, %v; want queued", st, err)
	}

	// The request as a whole: refused before sending, and by the server.
	if _, err := c.SubmitBatch(ctx, nil); err == nil {
		t.Error("SubmitBatch of no jobs: nil error")
	}
	if _, err := c.SubmitBatch(ctx, make([]payload.Job, client.MaxBatch+1)); err == nil {
		t.Errorf("SubmitBatch of %d jobs: nil error", client.MaxBatch+1)
	}
	big := job("b-big", "u-3")
	big.Alert.Body = strings.Repeat("x", 5000) // over the server's 4096-byte body limit
	var apiErr *client.Error
	if _, err := c.SubmitBatch(ctx, []payload.Job{big}); !errors.As(err, &apiErr) || apiErr.Status != http.StatusRequestEntityTooLarge {
		t.Errorf("batch over the body limit: %v, want a *client.Error with Status 413", err)
	}
}

// TestSubmitBatchChecksTheAnswer: an answer that is not one per job, or a
// job's answer without what its status promises, is an error.
func TestSubmitBatchChecksTheAnswer(t *testing.T) {
	for _, tc := range []struct{ name, answer string }{
		{"empty object", `{}`},
		{"fewer answers", `{"results":[]}`},
		{"accepted without id", `{"results":[{"status":202}]}`},
		{"refused without error", `{"results":[{"status":400}]}`},
		{"no status", `{"results":[{"id":"x"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				_, _ = io.WriteString(w, tc.answer)
			}))
			t.Cleanup(srv.Close)
			got, err := client.New(srv.URL).SubmitBatch(t.Context(), []payload.Job{job("j", "u")})
			if err == nil {
				t.Errorf("answer %s: %+v, want an error", tc.answer, got)
			}
		})
	}
}

// TestAnswersLackingFields: a 200 without the fields the API documents
// (a proxy's {}, another service) is an error, not zero values read as
// "already cancelled" or "nothing recorded".
func TestAnswersLackingFields(t *testing.T) {
	for _, answer := range []string{`{}`, `null`, `[]`, `{"id":"j","state":null}`} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, answer)
		}))
		t.Cleanup(srv.Close)
		c := client.New(srv.URL)
		if res, err := c.Cancel(t.Context(), "j"); err == nil {
			t.Errorf("Cancel answered %s: %+v, want an error", answer, res)
		}
		if st, err := c.Status(t.Context(), "j"); err == nil {
			t.Errorf("Status answered %s: %+v, want an error", answer, st)
		}
		if st, err := c.UserThrottle(t.Context(), "u"); err == nil {
			t.Errorf("UserThrottle answered %s: %+v, want an error", answer, st)
		}
	}
}

// TestPathUnfriendlyIDs: every job and user id the server accepts can be
// read back through the client; "." and ".." are refused at submit,
// naming the field.
func TestPathUnfriendlyIDs(t *testing.T) {
	a := startAPI(t)
	c := client.New(a.srv.URL, client.WithToken(token))
	ctx := t.Context()
	for _, id := range []string{"a/b", "a?b#c", "%2e%2e", "..a", "a..", "über", "a%2Fb"} {
		if _, err := c.Submit(ctx, job(id, "u-"+id)); err != nil {
			t.Errorf("submit %q: %v", id, err)
			continue
		}
		if st, err := c.Status(ctx, id); err != nil || st.ID != id {
			t.Errorf("status of %q: %+v, %v", id, st, err)
		}
		if st, err := c.UserThrottle(ctx, "u-"+id); err != nil || st.UserID != "u-"+id {
			t.Errorf("throttle of %q: %+v, %v", "u-"+id, st, err)
		}
	}
	for _, tc := range []struct{ id, user, field string }{
		{".", "u", "id"}, {"..", "u", "id"}, {"j-dot", ".", "recipients[0].user_id"}, {"j-dotdot", "..", "recipients[0].user_id"},
	} {
		_, err := c.Submit(ctx, job(tc.id, tc.user))
		var apiErr *client.Error
		if !errors.As(err, &apiErr) || apiErr.Status != 400 || len(apiErr.Problems) != 1 || apiErr.Problems[0].Field != tc.field {
			t.Errorf("submit id %q user %q: %v, want a 400 naming %s", tc.id, tc.user, err, tc.field)
		}
	}
}
