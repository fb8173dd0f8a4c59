package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"

	"github.com/hushpush/hush/wire"
)

// Preferences are one user's own say over their pushes in one app, as
// PutPreferences sends them: the categories opted out of, the user's
// quiet hours ("22:00-07:00") and IANA time zone. A field left empty is
// none. UserPreferences are the preferences stored, as the server answers
// them; UserDeleted the answer of DeleteUser.
type (
	Preferences     = wire.Preferences
	UserPreferences = wire.UserPreferences
	UserDeleted     = wire.UserDeleted
)

// The fields docs/openapi.yaml requires in these answers.
var (
	userPreferencesFields = []string{"user_id", "app", "opt_out"}
	userDeletedFields     = []string{"status", "user_id", "app"}
)

// PutPreferences replaces user's preferences in app ("": the only app,
// else default) with p, whole (PUT /v1/users/{id}/preferences), and
// returns them as stored. A bad field is a *Error with Status 400 whose
// Problems name it; an app not configured a *Error with Status 404.
func (c *Client) PutPreferences(ctx context.Context, app, user string, p Preferences) (UserPreferences, error) {
	if user == "" {
		return UserPreferences{}, errors.New("client: PutPreferences needs a user id")
	}
	b, err := json.Marshal(p)
	if err != nil {
		return UserPreferences{}, err
	}
	var out UserPreferences
	err = c.call(ctx, http.MethodPut, preferencesPath(user)+query("app", app), b, &out, userPreferencesFields...)
	return out, err
}

// GetPreferences returns user's preferences in app (GET
// /v1/users/{id}/preferences): empty, not an error, when none are stored.
func (c *Client) GetPreferences(ctx context.Context, app, user string) (UserPreferences, error) {
	if user == "" {
		return UserPreferences{}, errors.New("client: GetPreferences needs a user id")
	}
	var out UserPreferences
	err := c.call(ctx, http.MethodGet, preferencesPath(user)+query("app", app), nil, &out, userPreferencesFields...)
	return out, err
}

// DeletePreferences deletes user's preferences in app (DELETE
// /v1/users/{id}/preferences) and returns the empty ones.
func (c *Client) DeletePreferences(ctx context.Context, app, user string) (UserPreferences, error) {
	if user == "" {
		return UserPreferences{}, errors.New("client: DeletePreferences needs a user id")
	}
	var out UserPreferences
	err := c.call(ctx, http.MethodDelete, preferencesPath(user)+query("app", app), nil, &out, userPreferencesFields...)
	return out, err
}

// DeleteUser removes every key hush keeps for user in app (DELETE
// /v1/users/{id}), for a data-deletion request: preferences, limiter
// state and collapse records. Events naming the user and jobs not yet
// finished stay (docs/api.md). Deleting again is safe.
func (c *Client) DeleteUser(ctx context.Context, app, user string) (UserDeleted, error) {
	if user == "" {
		return UserDeleted{}, errors.New("client: DeleteUser needs a user id")
	}
	var out UserDeleted
	err := c.call(ctx, http.MethodDelete, "/v1/users/"+url.PathEscape(user)+query("app", app), nil, &out, userDeletedFields...)
	return out, err
}

func preferencesPath(user string) string {
	return "/v1/users/" + url.PathEscape(user) + "/preferences"
}
