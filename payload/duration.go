package payload

import (
	"encoding/json"
	"fmt"
	"time"
)

// MarshalJSON writes d as a Go duration string ("2h0m0s").
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a Go duration string ("90s", "2h"). Numbers are
// rejected: a bare 3600 would leave the unit to guesswork. Decode reports a
// bad value under the field's path.
func (d *Duration) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("must be a duration string like \"2h\", not %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("invalid duration %q: want a Go duration like \"90s\" or \"2h\"", s)
	}
	*d = Duration(v)
	return nil
}
