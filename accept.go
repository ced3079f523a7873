package hookinbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
	"github.com/hookinbox/hookinbox/internal/groupcommit"
)

// ErrOverloaded is returned by Receive when the queue of receipts waiting for their
// batch is full. The endpoint answers 503 with Retry-After, never 2xx: the sender
// retries, and nothing was written. The endpoint answers the same to a request whose
// body returns an error wrapping ErrOverloaded, which a server in front uses to
// decline a body it has no memory for before reading it.
var ErrOverloaded = errors.New("too many receipts waiting to be committed")

// GroupConfig configures a group commit: deliveries that wait for a shared commit
// instead of paying one each. A few flushers, each with its own connection, take
// every delivery already waiting and commit them together. There is no timer: a lone
// delivery is committed at once, and groups grow with load, by as many deliveries as
// arrived during the previous commit. Each delivery is answered only after its group
// committed.
type GroupConfig struct {
	// Flushers is the number of groups committed at once, each on a connection of its
	// own.
	Flushers int

	// MaxBatch caps the deliveries of one group. 1 gives every delivery a transaction
	// of its own.
	MaxBatch int

	// QueueSize caps the deliveries waiting for a group. When it is full, deliveries
	// are refused with ErrOverloaded (HTTP 503 with Retry-After) until groups drain it.
	//
	// Defaults to 10,000.
	QueueSize int
}

func (c GroupConfig) withDefaults(flushers, maxBatch int) GroupConfig {
	if c.Flushers == 0 {
		c.Flushers = flushers
	}
	if c.MaxBatch == 0 {
		c.MaxBatch = maxBatch
	}
	if c.QueueSize == 0 {
		c.QueueSize = 10_000
	}
	return c
}

func (c GroupConfig) validate(what string) error {
	if c.Flushers < 1 || c.MaxBatch < 1 || c.QueueSize < 1 {
		return fmt.Errorf("%s flushers, max batch and queue size must be positive", what)
	}
	return nil
}

// acceptTimeout bounds one batch's statement, so that a database that stops answering
// fails the waiting deliveries (5xx, the senders retry) instead of holding them.
const acceptTimeout = 10 * time.Second

// newAccepter returns the accept path's group commit. handOff is told of every batch
// whose statement succeeded, with a time no later than its start: the receipts it
// leased go to the workers from there (handoff.go). handBack is told of every batch
// whose failure is final for its receipts (it is not split and flushed again): the
// room of those leased is free again, whether or not their receivers still wait.
func newAccepter(ex driver.Executor, c GroupConfig, observe func(GroupInfo),
	handOff func(batch []*driver.InboxInsertParams, inserted []bool, at time.Time),
	handBack func(batch []*driver.InboxInsertParams)) *groupcommit.Committer[*driver.InboxInsertParams, bool] {
	// A row the database refuses fails its whole statement; halving isolates it, so
	// its neighbours are committed and only its sender is refused. An unreachable
	// database fails every half alike: no point in splitting then.
	split := func(err error) bool {
		return !errors.Is(err, driver.ErrUnavailable) && !errors.Is(err, context.DeadlineExceeded)
	}
	return groupcommit.New(groupcommit.Config{
		Flushers: c.Flushers, MaxBatch: c.MaxBatch, QueueSize: c.QueueSize, Timeout: acceptTimeout,
		SplitFunc: split,
	}, func(ctx context.Context, batch []*driver.InboxInsertParams) ([]bool, error) {
		start := time.Now()
		inserted, err := insertBatch(ctx, ex, batch)
		if err == nil && len(inserted) != len(batch) {
			// groupcommit would fail the batch for it after handOff: fail it here.
			err = fmt.Errorf("hookinbox: %d results for a batch of %d", len(inserted), len(batch))
		}
		observe(GroupInfo{Kind: GroupAccept, Size: len(batch), Failed: err != nil, Latency: time.Since(start)})
		switch {
		case err == nil:
			handOff(batch, inserted, start)
		case len(batch) == 1 || !split(err): // as groupcommit decides: its last flush of these
			handBack(batch)
		}
		return inserted, err
	})
}

// insertBatch inserts a batch whose receipts may repeat a key (two copies of one event
// in one batch): the first copy goes to the database, and every later copy is a
// duplicate of it, whichever way the first one turns out.
func insertBatch(ctx context.Context, ex driver.Executor, batch []*driver.InboxInsertParams) ([]bool, error) {
	first := make(map[hookinboxtype.Key]int, len(batch))
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
