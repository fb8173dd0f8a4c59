package worker

import (
	"github.com/hushpush/hush/wire"
)

// The values of JobStatus.Outcome: what a job with no recipient pending
// came to, whatever its state (done or cancelled).
const (
	OutcomeDelivered       = wire.OutcomeDelivered
	OutcomePartlyDelivered = wire.OutcomePartlyDelivered
	OutcomeUndelivered     = wire.OutcomeUndelivered
)
