package payload

import "time"

// Deadline is when the job expires: ExpiresAt when set, else AcceptedAt+TTL
// when both are set, else the zero time (no expiry).
func (j *Job) Deadline() time.Time {
	if j.ExpiresAt != nil {
		return *j.ExpiresAt
	}
	if j.TTL > 0 && !j.AcceptedAt.IsZero() {
		return j.AcceptedAt.Add(time.Duration(j.TTL))
	}
	return time.Time{}
}
