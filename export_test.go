package hookinbox

import (
	"context"

	"github.com/hookinbox/hookinbox/driver"
)

// Internals the external tests drive one step at a time.

var ErrAlreadyProcessed = errAlreadyProcessed

// ClaimForTest claims one receipt of the given endpoints, as a worker does.
func (i *Inbox[TTx]) ClaimForTest(ctx context.Context, endpoints ...string) (*driver.Receipt, error) {
	return i.claim(ctx, endpoints)
}

// ProcessClaimedForTest processes a claimed receipt and records its failure, as a
// worker does.
func (i *Inbox[TTx]) ProcessClaimedForTest(ctx context.Context, r *driver.Receipt) error {
	return i.processClaimed(ctx, r)
}
