package decide

// Gate is what a read of a job's cancellation lets its deliveries do.
type Gate int

const (
	// GateOpen: the job was not cancelled when read: a call may start
	// within the cancellation window of the read.
	GateOpen Gate = iota
	// GateCancelled: the job is cancelled: drop, sending nothing.
	GateCancelled
	// GateUnknown: the read failed (a dropped connection, a failover), so
	// the job may be cancelled: nothing is sent, and the delivery reads
	// again on its next run.
	GateUnknown
)

// GateOf decides whether a delivery may send given a read of its job's
// cancellation: its answer (cancelled) and its error. Every path that
// reads the cancellation apart from the delivery's states asks it, so a
// read that fails allows nothing.
func GateOf(cancelled bool, readErr error) Gate {
	switch {
	case readErr != nil:
		return GateUnknown
	case cancelled:
		return GateCancelled
	}
	return GateOpen
}
