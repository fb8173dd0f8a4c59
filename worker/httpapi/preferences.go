package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/wire"
	"github.com/hushpush/hush/worker"
)

// A user's own preferences and data deletion, per app (?app=, else the
// only app or default, as the throttle routes):
//
//	PUT    /v1/users/{id}/preferences  replace them: 200 with them as stored
//	GET    /v1/users/{id}/preferences  read them: 200, empty when none
//	DELETE /v1/users/{id}/preferences  delete them: 200 with the empty ones
//	DELETE /v1/users/{id}              delete every key hush keeps for the user
//
// An app not configured answers 404, none named where several are 400, a
// limiter that keeps no preferences 501 (worker.ErrNoPreferences).

// prefsField is the JSON name of each throttle.PreferencesError.Field.
var prefsField = map[string]string{"OptOut": "opt_out", "Quiet": "quiet_hours", "Location": "timezone"}

// userApp is the app a user route names (?app=), as resolved, when the
// request's token may act for it; it answers the request itself (false)
// when not.
func (a *server) userApp(rw http.ResponseWriter, r *http.Request) (string, bool) {
	app, ok, err := a.routeApp(rw, r)
	if !ok {
		return "", false
	}
	if err != nil {
		a.userError(rw, err, "find the app")
		return "", false
	}
	return app.Name, true
}

// userError answers a user route's error: what ("read the preferences")
// says what could not be done when Redis did not answer.
func (a *server) userError(rw http.ResponseWriter, err error, what string) {
	pe, isPrefs := errors.AsType[*throttle.PreferencesError](err)
	switch {
	case isPrefs:
		writeProblems(rw, payload.NewValidationError([]payload.FieldError{{Field: prefsField[pe.Field], Message: pe.Reason}}, 0))
	case errors.Is(err, worker.ErrUnknownApp):
		writeError(rw, http.StatusNotFound, "app: "+err.Error())
	case errors.Is(err, worker.ErrAppRequired):
		writeError(rw, http.StatusBadRequest, "app: "+err.Error())
	case errors.Is(err, worker.ErrNoPreferences):
		writeError(rw, http.StatusNotImplemented, err.Error())
	default:
		a.log.Error("user data call failed", "err", err)
		writeError(rw, http.StatusServiceUnavailable, "could not "+what+", try again")
	}
}

func (a *server) putPreferences(rw http.ResponseWriter, r *http.Request) {
	app, ok := a.userApp(rw, r)
	if !ok {
		return
	}
	in, err := decodePreferences(http.MaxBytesReader(rw, r.Body, a.maxBody))
	if tooLarge, ok := errors.AsType[*http.MaxBytesError](err); ok {
		writeError(rw, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", tooLarge.Limit))
		return
	}
	var p throttle.Preferences
	if err == nil {
		p, err = preferencesOf(in)
	}
	if ve, ok := errors.AsType[*payload.ValidationError](err); ok {
		writeProblems(rw, ve)
		return
	}
	if err != nil {
		writeError(rw, http.StatusBadRequest, err.Error())
		return
	}
	user := r.PathValue("id")
	if err := a.jobs.PutPreferences(r.Context(), app, user, p); err != nil {
		a.userError(rw, err, "store the preferences")
		return
	}
	// The answer is what GET answers now: the opt-outs sorted, once each.
	slices.Sort(p.OptOut)
	p.OptOut = slices.Compact(p.OptOut)
	writeJSON(rw, http.StatusOK, userPreferences(user, app, p))
}

func (a *server) getPreferences(rw http.ResponseWriter, r *http.Request) {
	app, ok := a.userApp(rw, r)
	if !ok {
		return
	}
	user := r.PathValue("id")
	p, err := a.jobs.GetPreferences(r.Context(), app, user)
	if err != nil {
		a.userError(rw, err, "read the preferences")
		return
	}
	writeJSON(rw, http.StatusOK, userPreferences(user, app, p))
}

func (a *server) deletePreferences(rw http.ResponseWriter, r *http.Request) {
	app, ok := a.userApp(rw, r)
	if !ok {
		return
	}
	user := r.PathValue("id")
	if err := a.jobs.PutPreferences(r.Context(), app, user, throttle.Preferences{}); err != nil {
		a.userError(rw, err, "delete the preferences")
		return
	}
	writeJSON(rw, http.StatusOK, userPreferences(user, app, throttle.Preferences{}))
}

func (a *server) deleteUser(rw http.ResponseWriter, r *http.Request) {
	app, ok := a.userApp(rw, r)
	if !ok {
		return
	}
	user := r.PathValue("id")
	if err := a.jobs.DeleteUser(r.Context(), app, user); err != nil {
		a.userError(rw, err, "delete the user")
		return
	}
	a.log.Info("user deleted", "user", user, "app", app)
	writeJSON(rw, http.StatusOK, wire.UserDeleted{Status: "deleted", UserID: user, App: app})
}

// userPreferences is the answer for p.
func userPreferences(user, app string, p throttle.Preferences) wire.UserPreferences {
	out := wire.UserPreferences{UserID: user, App: app, OptOut: p.OptOut}
	if out.OptOut == nil {
		out.OptOut = []string{}
	}
	if !p.Quiet.Off() {
		out.QuietHours = p.Quiet.String()
	}
	if p.Location != nil {
		out.Timezone = p.Location.String()
	}
	return out
}

// decodePreferences reads one JSON object of wire.Preferences strictly:
// every field spelt exactly and given once, of its type, nothing else and
// nothing after it. Field problems are a *payload.ValidationError naming
// each field by its JSON name; other errors say what is wrong with the
// JSON (a *http.MaxBytesError is returned as it is).
func decodePreferences(r io.Reader) (wire.Preferences, error) {
	var p wire.Preferences
	dec := json.NewDecoder(r)
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return p, malformedPreferences(err)
	}
	var ps []payload.FieldError
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return p, malformedPreferences(err)
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return p, malformedPreferences(err)
		}
		var dst any
		want := "a string"
		switch key {
		case "opt_out":
			dst, want = &p.OptOut, "an array of category names"
		case "quiet_hours":
			dst = &p.QuietHours
		case "timezone":
			dst = &p.Timezone
		default:
			ps = append(ps, payload.FieldError{Field: key, Message: "unknown field (want opt_out, quiet_hours or timezone)"})
			continue
		}
		if seen[key] {
			ps = append(ps, payload.FieldError{Field: key, Message: "given twice"})
			continue
		}
		seen[key] = true
		if err := json.Unmarshal(raw, dst); err != nil || string(raw) == "null" {
			ps = append(ps, payload.FieldError{Field: key, Message: "want " + want})
		}
	}
	if _, err := dec.Token(); err != nil {
		return p, malformedPreferences(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return p, err
		}
		return p, errors.New("trailing data after the preferences object")
	}
	if len(ps) > 0 {
		return p, payload.NewValidationError(ps, 0)
	}
	return p, nil
}

// malformedPreferences is the error of a body that is not one JSON object
// (err nil: another JSON value).
func malformedPreferences(err error) error {
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return err
	}
	if err == nil || errors.Is(err, io.EOF) {
		return errors.New(`the preferences are a JSON object {"opt_out": [...], "quiet_hours": "22:00-07:00", "timezone": "Europe/Paris"}`)
	}
	return fmt.Errorf("malformed preferences JSON: %w", err)
}

// preferencesOf reads the quiet hours and the zone of in; the limiter
// checks the opt-outs and the bounds (a *throttle.PreferencesError).
func preferencesOf(in wire.Preferences) (throttle.Preferences, error) {
	p := throttle.Preferences{OptOut: in.OptOut}
	var ps []payload.FieldError
	q, err := throttle.ParseQuiet(in.QuietHours)
	if pe, ok := errors.AsType[*throttle.ParseError](err); ok {
		ps = append(ps, payload.FieldError{Field: "quiet_hours", Message: strconv.Quote(pe.Text) + ": " + pe.Reason})
	} else if err != nil {
		ps = append(ps, payload.FieldError{Field: "quiet_hours", Message: err.Error()})
	}
	p.Quiet = q
	loc, err := (payload.Recipient{Timezone: in.Timezone}).Location()
	if err != nil {
		ps = append(ps, payload.FieldError{Field: "timezone", Message: err.Error()})
	}
	p.Location = loc
	if len(ps) > 0 {
		return throttle.Preferences{}, payload.NewValidationError(ps, 0)
	}
	return p, nil
}

// writeProblems answers 400 with ve's problems, their fields named in the
// message ("invalid preferences (quiet_hours, timezone)"), the reasons in
// problems.
func writeProblems(rw http.ResponseWriter, ve *payload.ValidationError) {
	problems := make([]wire.Problem, len(ve.Problems))
	var fields []string
	for i, p := range ve.Problems {
		problems[i] = wire.Problem{Field: p.Field, Message: p.Message}
		if !slices.Contains(fields, p.Field) {
			fields = append(fields, p.Field)
		}
	}
	msg := "invalid preferences (" + strings.Join(fields, ", ") + ")"
	writeJSON(rw, http.StatusBadRequest, wire.ErrorBody{Error: &wire.ErrorDetail{Message: msg, Problems: problems, Omitted: ve.Omitted}})
}
