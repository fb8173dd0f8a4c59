package payload

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Validate checks j against the rules listed in the package documentation
// and returns nil or a *ValidationError with its problems, in document
// order (the first MaxProblems, and a count of the others). Recipients and
// devices past their limits are not checked one by one. now is the
// reference for send_at and expires_at.
func (j *Job) Validate(now time.Time) error {
	var ps problems
	checkID(&ps, j.ID)
	if !j.AcceptedAt.IsZero() {
		// The deadline and how long the job's records answer duplicates
		// count from it: only hush sets it, when it accepts the job.
		ps.add("accepted_at", "is set by hush when it accepts the job; remove it")
	}
	used := j.checkRecipients(&ps)
	j.Content.check(&ps, now)
	j.Content.checkSize(&ps, used)
	return ps.err()
}

func checkID(ps *problems, id string) {
	switch {
	case isDotSegment(id):
		ps.add("id", dotSegmentMessage(id, "/v1/notifications/{id}"))
	case len(id) > MaxIDBytes:
		ps.add("id", fmt.Sprintf("is %d bytes, limit %d", len(id), MaxIDBytes))
	case !utf8.ValidString(id):
		ps.add("id", "is not valid UTF-8")
	default:
		for i, r := range id {
			if !unicode.IsPrint(r) || unicode.IsSpace(r) {
				ps.add("id", fmt.Sprintf("contains whitespace or a control character at byte %d", i))
				return
			}
		}
	}
}

// isDotSegment reports whether id is "." or "..": a URL path segment
// that clients and servers resolve away (RFC 3986 section 5.2.4) however it
// is escaped, so no request could name the job or user again.
func isDotSegment(id string) bool { return id == "." || id == ".." }

func dotSegmentMessage(id, route string) string {
	return fmt.Sprintf("cannot be %q: a URL path cannot carry it (%s)", id, route)
}

// checkRecipients checks the recipients and returns the platforms in use.
func (j *Job) checkRecipients(ps *problems) map[Platform]bool {
	used := map[Platform]bool{}
	switch n := len(j.Recipients); {
	case n == 0:
		ps.add("recipients", "at least one recipient is required")
	case n > MaxRecipients:
		ps.add("recipients", fmt.Sprintf("%d recipients, limit %d", n, MaxRecipients))
	}
	recipients := j.Recipients[:min(len(j.Recipients), MaxRecipients)]
	// Empty ids are reported as missing, not as duplicates: the map holds
	// only the others, so a job of empty recipients allocates none.
	firstIndex := map[string]int{}
	// Loading a zone may read a file: each name is loaded once per job.
	zoneErrs := map[string]error{}
	for i, r := range recipients {
		path := "recipients[" + strconv.Itoa(i) + "]"
		checkUserID(ps, path+".user_id", r.UserID)
		if first, dup := firstIndex[r.UserID]; dup {
			ps.add(path+".user_id", fmt.Sprintf("duplicate of recipients[%d].user_id", first))
		} else if r.UserID != "" {
			firstIndex[r.UserID] = i
		}
		if r.Timezone != "" {
			err, seen := zoneErrs[r.Timezone]
			if !seen {
				_, err = r.Location()
				zoneErrs[r.Timezone] = err
			}
			if err != nil {
				ps.add(path+".timezone", err.Error())
			}
		}
		checkDevices(ps, path, r.Devices, used)
	}
	return used
}

func checkUserID(ps *problems, path, id string) {
	switch {
	case id == "":
		ps.add(path, "is required")
	case isDotSegment(id):
		ps.add(path, dotSegmentMessage(id, "/v1/users/{id}/throttle"))
	case len(id) > MaxIDBytes:
		ps.add(path, fmt.Sprintf("is %d bytes, limit %d", len(id), MaxIDBytes))
	case !utf8.ValidString(id):
		ps.add(path, "is not valid UTF-8")
	case strings.ContainsFunc(id, unicode.IsControl):
		ps.add(path, "contains a control character")
	}
}

func checkDevices(ps *problems, path string, devices []Device, used map[Platform]bool) {
	switch n := len(devices); {
	case n == 0:
		ps.add(path+".devices", "at least one device is required")
	case n > MaxDevices:
		ps.add(path+".devices", fmt.Sprintf("%d devices, limit %d", n, MaxDevices))
	}
	devices = devices[:min(len(devices), MaxDevices)]
	firstIndex := make(map[string]int, len(devices))
	for i, d := range devices {
		dpath := path + ".devices[" + strconv.Itoa(i) + "]"
		switch {
		case d.Platform == "":
			ps.add(dpath+".platform", "is required: "+platformChoice())
		case !d.Platform.Valid():
			ps.add(dpath+".platform", fmt.Sprintf("unknown platform %q, want %s", d.Platform, platformChoice()))
		default:
			used[d.Platform] = true
		}
		if msg := tokenProblem(d); msg != "" {
			ps.add(dpath+".token", msg)
		}
		if first, dup := firstIndex[d.Token]; dup && d.Token != "" {
			ps.add(dpath+".token", fmt.Sprintf("duplicate of devices[%d].token", first))
		} else {
			firstIndex[d.Token] = i
		}
	}
}

// tokenProblem describes what is wrong with d's token, or returns "".
// A token of an unknown platform is only checked for presence.
func tokenProblem(d Device) string {
	if d.Token == "" {
		return "is required"
	}
	if spec, ok := platforms[d.Platform]; ok {
		return spec.tokenProblem(d.Token)
	}
	return ""
}

// check validates the content fields, in document order.
func (c *Content) check(ps *problems, now time.Time) {
	c.checkAlert(ps)
	c.checkData(ps)
	if c.App != "" && !ValidApp(c.App) {
		ps.add("app", fmt.Sprintf("invalid app %q: want 1 to %d of a-z, 0-9, _ and -", c.App, MaxAppBytes))
	}
	if !c.Priority.Valid() {
		ps.add("priority", fmt.Sprintf(`unknown priority %q, want "normal", "high" or "critical"`, c.Priority))
	}
	if c.Category != "" && !ValidCategory(c.Category) {
		ps.add("category", fmt.Sprintf("invalid category %q: want 1 to %d of a-z, 0-9, _ and -", c.Category, MaxCategoryBytes))
	}
	switch k := c.CollapseKey; {
	case len(k) > MaxCollapseKeyBytes:
		ps.add("collapse_key", fmt.Sprintf("is %d bytes, limit %d (apns-collapse-id)", len(k), MaxCollapseKeyBytes))
	case !utf8.ValidString(k):
		ps.add("collapse_key", "is not valid UTF-8")
	default:
		// APNs carries it in the apns-collapse-id header, which cannot
		// hold a control character: such a send could never succeed.
		if i := strings.IndexFunc(k, unicode.IsControl); i >= 0 {
			ps.add("collapse_key", fmt.Sprintf("contains a control character at byte %d (it is sent as the apns-collapse-id header)", i))
		}
	}
	c.checkTimes(ps, now)
}

// checkTimes checks send_at, ttl and expires_at.
func (c *Content) checkTimes(ps *problems, now time.Time) {
	if c.SendAt != nil {
		switch {
		case c.SendAt.Before(now):
			ps.add("send_at", fmt.Sprintf("%s is in the past (now %s)",
				c.SendAt.Format(time.RFC3339), now.UTC().Format(time.RFC3339)))
		case c.SendAt.Sub(now) > MaxSendAhead:
			ps.add("send_at", fmt.Sprintf("%s is more than the limit of %s (%d days) ahead (now %s)",
				c.SendAt.Format(time.RFC3339), MaxSendAhead, MaxSendAhead/(24*time.Hour), now.UTC().Format(time.RFC3339)))
		}
	}
	switch ttl := time.Duration(c.TTL); {
	case ttl < 0:
		ps.add("ttl", fmt.Sprintf("must be positive, got %s", ttl))
	case ttl > MaxTTL:
		ps.add("ttl", fmt.Sprintf("%s is longer than the limit of %s (28 days, FCM's maximum)", ttl, MaxTTL))
	}
	if c.ExpiresAt != nil {
		if c.TTL != 0 {
			ps.add("expires_at", "cannot be combined with ttl: set one of them")
		}
		if c.ExpiresAt.Before(now) {
			ps.add("expires_at", fmt.Sprintf("%s is in the past (now %s)",
				c.ExpiresAt.Format(time.RFC3339), now.UTC().Format(time.RFC3339)))
		}
		if c.SendAt != nil && !c.ExpiresAt.After(*c.SendAt) {
			ps.add("expires_at", fmt.Sprintf("%s is not after send_at (%s)",
				c.ExpiresAt.Format(time.RFC3339), c.SendAt.Format(time.RFC3339)))
		}
	}
}

func (c *Content) checkAlert(ps *problems) {
	a := c.Alert
	switch {
	case c.Silent && a != nil:
		ps.add("alert", "must be absent when silent is true: silent pushes carry data only")
	case !c.Silent && (a == nil || a.Title == "" && a.Body == ""):
		ps.add("alert", "a job that is not silent needs alert.title or alert.body")
	}
	if a == nil {
		return
	}
	if a.Badge != nil && *a.Badge < 0 {
		ps.add("alert.badge", fmt.Sprintf("must be 0 or more, got %d", *a.Badge))
	}
	if a.Image != "" {
		if u, err := url.Parse(a.Image); err != nil || u.Scheme != "https" || u.Host == "" {
			ps.add("alert.image", "must be an https URL")
		}
	}
}

func (c *Content) checkData(ps *problems) {
	if n := len(c.Data); n > MaxDataKeys {
		ps.add("data", fmt.Sprintf("%d keys, limit %d (the rendered payload cannot fit %d bytes)", n, MaxDataKeys, MaxPayloadBytes))
		return
	}
	for _, k := range slices.Sorted(maps.Keys(c.Data)) {
		path := "data[" + strconv.Quote(k) + "]"
		if k == "" {
			ps.add(path, "empty key")
			continue
		}
		if msg := c.reservedKeyProblem(k); msg != "" {
			ps.add(path, msg)
		}
	}
}

// reservedKeyProblem returns the first platform's objection to the data key
// k, or "". Every platform's reserved keys apply, whatever the job uses.
func (c *Content) reservedKeyProblem(k string) string {
	for _, p := range Platforms() {
		if msg := platforms[p].dataKeyProblem(c, k); msg != "" {
			return msg
		}
	}
	return ""
}

// checkSize renders the payloads of the platforms in use and reports those
// over their platform's limit.
func (c *Content) checkSize(ps *problems, used map[Platform]bool) {
	field := "data"
	if c.Alert != nil {
		field = "alert"
	}
	for _, p := range Platforms() {
		if !used[p] {
			continue
		}
		spec := platforms[p]
		if spec.contentProblem != nil {
			if f, msg := spec.contentProblem(c); msg != "" {
				ps.add(f, msg)
			}
		}
		if b, err := spec.render(c); err != nil {
			ps.add(field, err.Error())
		} else if len(b) > spec.maxBytes {
			ps.add(field, fmt.Sprintf("rendered %s is %d bytes, limit %d", spec.rendered, len(b), spec.maxBytes))
		}
	}
}
