package wire

// Preferences are one user's own say over their pushes in one app: the
// body of PUT /v1/users/{id}/preferences (docs/api.md). Each field left
// out is none: a PUT replaces the whole.
type Preferences struct {
	// OptOut are the categories the user opted out of (at most
	// throttle.MaxOptOuts category names; a name the app does not have
	// is kept).
	OptOut []string `json:"opt_out,omitempty"`
	// QuietHours are the user's own quiet hours, "22:00-07:00" as the
	// apps file writes them ("" or "off": none).
	QuietHours string `json:"quiet_hours,omitempty"`
	// Timezone is the user's IANA time zone, as a job's recipient names
	// it ("Europe/Paris"; "": none).
	Timezone string `json:"timezone,omitempty"`
}

// UserPreferences are the preferences stored for one user of one app: the
// answer of GET, PUT and DELETE /v1/users/{id}/preferences. A user with
// none has OptOut empty and no QuietHours or Timezone.
type UserPreferences struct {
	UserID string `json:"user_id"`
	// App is the app they are kept for (?app=, else the only app or
	// default).
	App string `json:"app"`
	// OptOut are the categories opted out of, sorted, without duplicates;
	// empty, not absent, when none.
	OptOut []string `json:"opt_out"`
	// QuietHours are the user's own quiet hours in canonical form
	// ("22:00-07:00"); absent when none.
	QuietHours string `json:"quiet_hours,omitempty"`
	// Timezone is the user's zone; absent when none.
	Timezone string `json:"timezone,omitempty"`
}

// UserDeleted is the answer of DELETE /v1/users/{id}: every key hush
// kept for the user in App is gone.
type UserDeleted struct {
	// Status is "deleted".
	Status string `json:"status"`
	UserID string `json:"user_id"`
	App    string `json:"app"`
}
