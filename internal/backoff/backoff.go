// Package backoff is the host's one retry schedule: exponential from a base,
// doubling per attempt up to a cap, with ±20% jitter so that many retries
// (plugins restarting, a speaker fleet reconnecting) do not move in step.
package backoff

import (
	"math/rand/v2"
	"time"
)

// Backoff is the schedule. A zero Base means no wait; a Cap below Base is
// taken as Base.
type Backoff struct {
	Base time.Duration
	Cap  time.Duration
}

// Delay is the wait before retry number attempt (1 for the first retry):
// Base·2^(attempt-1), at most Cap, ±20%.
func (b Backoff) Delay(attempt int) time.Duration {
	return time.Duration(float64(b.Nominal(attempt)) * (0.8 + 0.4*rand.Float64()))
}

// Nominal is Delay without the jitter.
func (b Backoff) Nominal(attempt int) time.Duration {
	limit := max(b.Cap, b.Base)
	d := b.Base
	for i := 1; i < attempt && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}
