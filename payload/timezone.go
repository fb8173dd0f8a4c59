package payload

import (
	"fmt"
	"strings"
	"time"

	// The IANA time zone database, built in: whether a timezone is valid
	// must be answered the same on every machine, including minimal
	// container images without /usr/share/zoneinfo.
	_ "time/tzdata"
)

// Location returns the time zone of the recipient's quiet hours: nil when
// Timezone is empty (the server's default applies), else the IANA zone it
// names. The error's text is the problem Validate reports on the field.
func (r Recipient) Location() (*time.Location, error) {
	if r.Timezone == "" {
		return nil, nil
	}
	return loadTimezone(r.Timezone)
}

// loadTimezone loads the IANA zone name. It refuses the names that mean
// the server machine's own zone ("Local", and "localtime", a link to
// /etc/localtime in many zoneinfo directories), and those only some
// machines' zoneinfo directories hold ("posix/...", "right/...",
// "posixrules"), so that a name is valid everywhere or nowhere.
func loadTimezone(name string) (*time.Location, error) {
	switch {
	case name == "Local" || name == "localtime":
		return nil, fmt.Errorf("%q is the server machine's own zone, meaningless to a client (want an IANA name such as Europe/Berlin)", name)
	case name == "posixrules" || strings.HasPrefix(name, "posix/") || strings.HasPrefix(name, "right/"):
		return nil, unknownTimezone(name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		// time's errors vary with the machine ("unknown time zone",
		// "malformed time zone information" for a file of zoneinfo that is
		// not a zone, a read error) and add nothing for the client: the
		// name is not a zone.
		return nil, unknownTimezone(name)
	}
	return loc, nil
}

func unknownTimezone(name string) error {
	return fmt.Errorf("unknown time zone %q (want an IANA name such as Europe/Berlin)", name)
}
