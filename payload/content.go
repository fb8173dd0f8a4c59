package payload

import "slices"

// Valid reports whether p is a priority a job may carry. The empty priority
// is valid and means PriorityNormal.
func (p Priority) Valid() bool {
	switch p {
	case "", PriorityNormal, PriorityHigh, PriorityCritical:
		return true
	}
	return false
}

// Effective returns p, or PriorityNormal when p is empty.
func (p Priority) Effective() Priority {
	if p == "" {
		return PriorityNormal
	}
	return p
}

// Urgent reports whether the push should be delivered immediately by the
// provider (high and critical), rather than when the device sees fit.
func (c *Content) Urgent() bool {
	p := c.Priority.Effective()
	return p == PriorityHigh || p == PriorityCritical
}

// IsBypass reports whether the content's priority (empty counts as normal)
// is one of the priorities that skip the limiter.
func (c *Content) IsBypass(bypass []Priority) bool {
	return slices.Contains(bypass, c.Priority.Effective())
}

// APNsPriority is the apns-priority header for the content: 10 (send now)
// for an urgent alert, 5 (power-considerate) for normal priority and always
// for silent pushes, as Apple requires for background pushes.
func (c *Content) APNsPriority() int {
	if c.Silent || !c.Urgent() {
		return 5
	}
	return 10
}

// APNsPushType is the apns-push-type header: "background" for silent
// pushes, "alert" otherwise.
func (c *Content) APNsPushType() string {
	if c.Silent {
		return "background"
	}
	return "alert"
}
