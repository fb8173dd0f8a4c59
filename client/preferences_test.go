package client_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hushpush/hush/client"
	"github.com/hushpush/hush/throttle"
)

// TestPreferences: the client puts, reads and deletes a user's
// preferences and deletes the user through the real API, keeping every
// field the server answers; a bad field is a *client.Error naming it.
func TestPreferences(t *testing.T) {
	a := startAPI(t)
	seen := &lastBody{}
	c := client.New(a.srv.URL, client.WithToken(token), client.WithHTTPClient(&http.Client{Transport: seen}))
	ctx := t.Context()
	const user = "u 1/ä?"
	empty := client.UserPreferences{UserID: user, App: "default", OptOut: []string{}}
	got, err := c.GetPreferences(ctx, "", user)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(empty, got); diff != "" {
		t.Errorf("preferences of a user with none (-want +got):\n%s", diff)
	}

	want := client.UserPreferences{UserID: user, App: "default", OptOut: []string{"marketing"}, QuietHours: "22:00-07:00", Timezone: quietZone}
	got, err = c.PutPreferences(ctx, "", user, client.Preferences{OptOut: []string{"marketing", "marketing"}, QuietHours: "22:00-07:00", Timezone: quietZone})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("put (-want +got):\n%s", diff)
	}
	sameJSON(t, seen.get(), got)
	if got, err = c.GetPreferences(ctx, "default", user); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("get after put (-want +got):\n%s", diff)
	}
	sameJSON(t, seen.get(), got)

	_, err = c.PutPreferences(ctx, "", user, client.Preferences{Timezone: "Mars/Olympus"})
	var ae *client.Error
	if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || len(ae.Problems) != 1 || ae.Problems[0].Field != "timezone" {
		t.Errorf("put of an unknown zone: %v, want a 400 *client.Error naming timezone", err)
	}
	_, err = c.GetPreferences(ctx, "nope", user)
	if !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
		t.Errorf("get for an unknown app: %v, want a 404 *client.Error", err)
	}

	if got, err = c.DeletePreferences(ctx, "", user); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(empty, got); diff != "" {
		t.Errorf("delete (-want +got):\n%s", diff)
	}

	if _, err := c.PutPreferences(ctx, "", user, client.Preferences{OptOut: []string{"marketing"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.lim.ReserveBatch(ctx, []throttle.Request{{User: user, Member: "j-1/0"}}); err != nil {
		t.Fatal(err)
	}
	pattern := throttle.DefaultPrefix + "{" + user + "}*"
	if keys, err := a.rdb.Keys(ctx, pattern).Result(); err != nil || len(keys) != 2 {
		t.Fatalf("keys of the user before DeleteUser: %v, %v; want its set and its preferences", keys, err)
	}
	del, err := c.DeleteUser(ctx, "", user)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(client.UserDeleted{Status: "deleted", UserID: user, App: "default"}, del); diff != "" {
		t.Errorf("delete user (-want +got):\n%s", diff)
	}
	sameJSON(t, seen.get(), del)
	if keys, err := a.rdb.Keys(ctx, pattern).Result(); err != nil || len(keys) > 0 {
		t.Errorf("keys of the user after DeleteUser: %v, %v; want none", keys, err)
	}
}
