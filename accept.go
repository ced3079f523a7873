package hookinbox

import (
	"context"
	"errors"
	"time"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/internal/groupcommit"
)

// ErrOverloaded is returned by Receive when the queue of receipts waiting for their
// batch is full. The endpoint answers 503 with Retry-After, never 2xx: the sender
// retries, and nothing was written.
var ErrOverloaded = errors.New("too many receipts waiting to be committed")

// AcceptConfig configures the group commit of the receipts that are stored without
// being processed: those of async endpoints, and events with no handler. Each such
// delivery waits for the commit of a batch: a few flushers, each with its own
// connection, take every receipt already waiting and insert them in one statement.
// There is no timer: a lone receipt is committed at once, and batches grow with load.
// A receipt is answered only after its batch committed.
type AcceptConfig struct {
	// Flushers is the number of batches committed at once, each on a connection of
	// its own.
	//
	// Defaults to 2 (1 on SQLite, which has one writer).
	Flushers int

	// MaxBatch caps the receipts of one batch.
	//
	// Defaults to 500.
	MaxBatch int

	// QueueSize caps the receipts waiting for a batch. When it is full, deliveries are
	// refused with ErrOverloaded (HTTP 503 with Retry-After) until batches drain it.
	//
	// Defaults to 10,000.
	QueueSize int
}

func (c AcceptConfig) withDefaults(driverName string) AcceptConfig {
	if c.Flushers == 0 {
		c.Flushers = 2
		if driverName == "sqlite" {
			c.Flushers = 1
		}
	}
	if c.MaxBatch == 0 {
		c.MaxBatch = 500
	}
	if c.QueueSize == 0 {
		c.QueueSize = 10_000
	}
	return c
}

func (c AcceptConfig) validate() error {
	if c.Flushers < 1 || c.MaxBatch < 1 || c.QueueSize < 1 {
		return errors.New("accept flushers, max batch and queue size must be positive")
	}
	return nil
}

// acceptTimeout bounds one batch's statement, so that a database that stops answering
// fails the waiting deliveries (5xx, the senders retry) instead of holding them.
const acceptTimeout = 10 * time.Second

func newAccepter(ex driver.Executor, c AcceptConfig) *groupcommit.Committer[*driver.InboxInsertParams, bool] {
	return groupcommit.New(groupcommit.Config{
		Flushers: c.Flushers, MaxBatch: c.MaxBatch, QueueSize: c.QueueSize, Timeout: acceptTimeout,
		// A row the database refuses fails its whole statement; halving isolates it,
		// so its neighbours are committed and only its sender is refused. An
		// unreachable database fails every half alike: no point in splitting then.
		SplitFunc: func(err error) bool {
			return !errors.Is(err, driver.ErrUnavailable) && !errors.Is(err, context.DeadlineExceeded)
		},
	}, func(ctx context.Context, batch []*driver.InboxInsertParams) ([]bool, error) {
		return insertBatch(ctx, ex, batch)
	})
}

// insertBatch inserts a batch whose receipts may repeat a key (two copies of one event
// in one batch): the first copy goes to the database, and every later copy is a
// duplicate of it, whichever way the first one turns out.
func insertBatch(ctx context.Context, ex driver.Executor, batch []*driver.InboxInsertParams) ([]bool, error) {
	first := make(map[driver.Key]int, len(batch))
	unique := make([]*driver.InboxInsertParams, 0, len(batch))
	index := make([]int, len(batch)) // batch position → unique position, or -1
	for n, p := range batch {
		if _, seen := first[p.Key]; seen {
			index[n] = -1
			continue
		}
		first[p.Key] = len(unique)
		index[n] = len(unique)
		unique = append(unique, p)
	}
	inserted, err := ex.InboxInsertMany(ctx, unique)
	if err != nil {
		return nil, err
	}
	out := make([]bool, len(batch))
	for n, u := range index {
		out[n] = u >= 0 && inserted[u]
	}
	return out, nil
}

// accept stores a receipt through the group commit and reports whether it was new.
func (i *Inbox[TTx]) accept(ctx context.Context, p *driver.InboxInsertParams) (bool, error) {
	inserted, err := i.accepter.Do(ctx, p)
	if errors.Is(err, groupcommit.ErrFull) {
		return false, ErrOverloaded
	}
	return inserted, err
}
