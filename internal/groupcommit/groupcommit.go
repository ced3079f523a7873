// Package groupcommit commits many callers' small writes as one batch: a caller hands
// in its item and waits; a few flushers, each committing one batch at a time, take
// whatever is waiting when they are free. There is no timer: a lone item is flushed
// at once, and batches grow with load, by as many items as arrived during the
// previous commit. Each caller is answered only after its batch returned.
package groupcommit

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrFull is returned by Do when the queue holds QueueSize items: the caller is
// refused at once rather than made to wait behind a backlog it cannot see.
var ErrFull = errors.New("group commit queue is full")

// FlushFunc writes items as one batch and returns one result per item, in order.
type FlushFunc[T, R any] func(ctx context.Context, items []T) ([]R, error)

// Config configures a Committer.
type Config struct {
	// Flushers is the number of batches in flight at once.
	Flushers int
	// MaxBatch caps the items of one batch.
	MaxBatch int
	// QueueSize caps the items waiting for a flusher.
	QueueSize int
	// Timeout bounds one flush, whatever the callers' contexts.
	Timeout time.Duration
	// SplitFunc reports whether a failed batch may have failed for one of its items:
	// then it is split in halves and each half flushed again, until the item that
	// fails is alone and only its caller gets the error. Nil never splits.
	SplitFunc func(error) bool
}

// Committer batches the items of concurrent Do calls.
type Committer[T, R any] struct {
	config Config
	flush  FlushFunc[T, R]

	mu     sync.Mutex
	queue  []*request[T, R]
	active int
}

type request[T, R any] struct {
	item T
	res  R
	err  error
	done chan struct{}
}

// New returns a Committer that writes batches with flush.
func New[T, R any](config Config, flush FlushFunc[T, R]) *Committer[T, R] {
	return &Committer[T, R]{config: config, flush: flush}
}

// Do queues item and waits for the result of the batch that wrote it. It returns
// ErrFull at once when the queue is full, and ctx's error when ctx ends first; the
// item's batch may then still commit, so the outcome is unknown to the caller.
func (c *Committer[T, R]) Do(ctx context.Context, item T) (R, error) {
	r := &request[T, R]{item: item, done: make(chan struct{})}
	c.mu.Lock()
	if len(c.queue) >= c.config.QueueSize {
		c.mu.Unlock()
		var zero R
		return zero, ErrFull
	}
	c.queue = append(c.queue, r)
	if c.active < c.config.Flushers {
		c.active++
		go c.run()
	}
	c.mu.Unlock()
	select {
	case <-r.done:
		return r.res, r.err
	case <-ctx.Done():
		var zero R
		return zero, ctx.Err()
	}
}

// Queued returns the number of items waiting for a flusher.
func (c *Committer[T, R]) Queued() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queue)
}

// run flushes what is waiting, batch after batch, and ends when nothing is: a
// flusher costs nothing while the committer is idle.
func (c *Committer[T, R]) run() {
	for {
		c.mu.Lock()
		n := min(len(c.queue), c.config.MaxBatch)
		if n == 0 {
			c.active--
			c.mu.Unlock()
			return
		}
		batch := make([]*request[T, R], n)
		copy(batch, c.queue)
		c.queue = c.queue[n:]
		if len(c.queue) == 0 {
			c.queue = nil // let the backing array go
		}
		c.mu.Unlock()
		c.flushBatch(batch)
	}
}

func (c *Committer[T, R]) flushBatch(batch []*request[T, R]) {
	items := make([]T, len(batch))
	for i, r := range batch {
		items[i] = r.item
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.config.Timeout)
	res, err := c.flush(ctx, items)
	cancel()
	if err == nil && len(res) != len(batch) {
		err = errors.New("groupcommit: flush returned a result count unlike the batch's")
	}
	if err != nil && len(batch) > 1 && c.config.SplitFunc != nil && c.config.SplitFunc(err) {
		mid := len(batch) / 2
		c.flushBatch(batch[:mid])
		c.flushBatch(batch[mid:])
		return
	}
	for i, r := range batch {
		if err != nil {
			r.err = err
		} else {
			r.res = res[i]
		}
		close(r.done)
	}
}
