package hookinbox

import (
	"math/rand/v2"
	"time"
)

// DefaultRetryDelay waits about 2^attempt seconds after a failed attempt, capped at 5
// minutes, with the upper half jittered so that receipts that failed together do not
// come due together.
func DefaultRetryDelay(attempt int) time.Duration {
	const maxDelay = 5 * time.Minute
	d := maxDelay
	if attempt < 9 { // 2^9 s > 5 min
		d = min(maxDelay, time.Duration(1<<max(attempt, 0))*time.Second)
	}
	return d/2 + rand.N(d/2+1)
}
