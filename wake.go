package hookinbox

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/hookinbox/hookinbox/driver"
)

// Waking other processes. Workers of this process are woken through a channel; those
// of other processes, when the driver can (PostgreSQL's LISTEN/NOTIFY), by a
// notification sent after the receipts' commit, never inside a receipt's transaction
// (PostgreSQL serialises the commits of notifying transactions), and coalesced: at
// most one per notifyInterval, however many receipts arrive. Polling stays the
// fallback, for a listener that is down or a pooler in transaction mode.

// notifyInterval is the most often this process notifies other processes.
const notifyInterval = 5 * time.Millisecond

// claimAgainWithin is how soon a busy worker is expected to claim again: an
// announcement wakes an idle worker only when no claim started for longer.
const claimAgainWithin = 10 * time.Millisecond

type remoteWaker struct {
	notifier driver.Notifier // nil: the driver cannot, or Config.PollOnly
	pending  chan struct{}
	// running is set while a notifyLoop runs; it ends when nothing is pending, so an
	// idle inbox (or one no longer used) keeps no goroutine.
	running atomic.Bool
}

func newRemoteWaker(d any, pollOnly bool) *remoteWaker {
	w := &remoteWaker{pending: make(chan struct{}, 1)}
	if n, ok := d.(driver.Notifier); ok && !pollOnly {
		w.notifier = n
	}
	return w
}

// announce wakes this process's workers, and those of other processes soon.
//
// A worker is woken only when none is at work. A busy worker claims again as soon as
// its batch is done and takes everything that arrived meanwhile in one batch; a full
// batch makes it wake the next worker, so workers join as the backlog needs them.
// Waking one per arrival instead let every worker claim the few rows of one group
// commit and commit a batch of one or two: 32 workers ran at a quarter of 4's rate.
// pending closes the gap in which a worker saw no rows and is about to go idle: it
// looks once more when an announcement came meanwhile.
func (i *Inbox[TTx]) announce() {
	i.pending.Store(true)
	if i.busy.Load() == 0 {
		i.notifyWorkers()
	}
	w := i.remote
	if w.notifier == nil {
		return
	}
	select {
	case w.pending <- struct{}{}:
	default: // a notification is due already: this one rides along
	}
	if w.running.CompareAndSwap(false, true) {
		go i.notifyLoop()
	}
}

// notifyLoop sends the pending notification, at most one per notifyInterval, and
// returns once none is pending.
func (i *Inbox[TTx]) notifyLoop() {
	w := i.remote
	for {
		select {
		case <-w.pending:
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := w.notifier.Notify(ctx, driver.ChannelInbox); err != nil {
				// Other processes poll meanwhile.
				i.logger.Debug("hookinbox: error notifying other processes", "error", err.Error())
			}
			cancel()
			time.Sleep(notifyInterval)
		default:
			w.running.Store(false)
			// An announce that found the loop still running, just before it stopped,
			// left its notification pending: take it over unless a new loop did.
			if len(w.pending) == 0 || !w.running.CompareAndSwap(false, true) {
				return
			}
		}
	}
}

// listen wakes this process's workers on other processes' notifications until ctx
// ends, listening again after a failure with a capped backoff; workers poll meanwhile.
func (i *Inbox[TTx]) listen(ctx context.Context) {
	n := i.remote.notifier
	if n == nil {
		return
	}
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		start := time.Now()
		err := n.Listen(ctx, driver.ChannelInbox, i.notifyWorkers)
		if ctx.Err() != nil {
			return
		}
		if time.Since(start) > time.Minute {
			backoff = 100 * time.Millisecond
		}
		i.logger.WarnContext(ctx, "hookinbox: not listening for other processes' receipts; workers poll until it listens again",
			"error", err.Error(), "retry_in", backoff.String())
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}
