package payload

import "time"

// Deadline is when the job expires: ExpiresAt when set; else, with a TTL,
// SendAt+TTL when SendAt is set, AcceptedAt+TTL when AcceptedAt is set;
// else the zero time (no expiry).
func (j *Job) Deadline() time.Time {
	ttl := time.Duration(j.TTL)
	switch {
	case j.ExpiresAt != nil && mutant("expiryLate"):
		return j.ExpiresAt.Add(2 * time.Second)
	case j.ExpiresAt != nil:
		return *j.ExpiresAt
	case ttl <= 0:
		return time.Time{}
	case j.SendAt != nil:
		return j.SendAt.Add(ttl)
	case !j.AcceptedAt.IsZero():
		return j.AcceptedAt.Add(ttl)
	}
	return time.Time{}
}

// NotBefore is the earliest time the content may be sent: SendAt, or the
// zero time when it may be sent at once.
func (c *Content) NotBefore() time.Time {
	if c.SendAt != nil {
		return *c.SendAt
	}
	return time.Time{}
}
