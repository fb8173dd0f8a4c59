package client_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/hushpush/hush/client"
	"github.com/hushpush/hush/internal/testkit"
)

// TestRecipients reads a queued job's recipients through the real API: a
// page, its cursor, every field of the server's answer kept, and a 400
// naming a bad state.
func TestRecipients(t *testing.T) {
	a := startAPI(t)
	var last lastBody
	c := client.New(a.srv.URL, client.WithToken(token), client.WithHTTPClient(&http.Client{Transport: &last}))
	job := testkit.AlertJob("rc-1", "hi", testkit.APNsRecipient("u-1", testkit.APNsToken("a")),
		testkit.APNsRecipient("u-2", testkit.APNsToken("b")), testkit.APNsRecipient("u-3", testkit.APNsToken("c")))
	if _, err := c.Submit(t.Context(), job); err != nil {
		t.Fatal(err)
	}
	p, err := c.Recipients(t.Context(), "rc-1", client.RecipientsQuery{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if p.ID != "rc-1" || p.Recipients != 3 || p.Retired || len(p.Items) != 2 || p.Items[1].Index != 1 || p.Items[1].State != "pending" || p.Next != "2" {
		t.Errorf("first page: %+v, want recipients 0 and 1 pending and next cursor 2", p)
	}
	sameJSON(t, last.get(), p)
	p, err = c.Recipients(t.Context(), "rc-1", client.RecipientsQuery{Cursor: p.Next, State: "pending"})
	if err != nil || len(p.Items) != 1 || p.Items[0].Index != 2 || p.Next != "" {
		t.Errorf("second page: %+v, %v; want recipient 2 and no next cursor", p, err)
	}
	_, err = c.Recipients(t.Context(), "rc-1", client.RecipientsQuery{State: "lost"})
	if apiErr, ok := errors.AsType[*client.Error](err); !ok || apiErr.Status != 400 || !strings.HasPrefix(apiErr.Message, "state:") {
		t.Errorf("state lost: %v, want a 400 naming state", err)
	}
}
