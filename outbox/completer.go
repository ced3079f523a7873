package outbox

import (
	"context"
	"slices"
	"time"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// maxMarkBatch is the most deliveries marked published by one statement.
const maxMarkBatch = 1000

// delivered is a message its sink accepted, waiting to be marked published.
type delivered struct {
	m     *hookinboxtype.OutboxMessage
	sink  string
	start time.Time // when its delivery was started, for ObserveFunc's latency
}

// completer marks delivered messages published, many per statement and one statement
// at a time: the deliveries that end while a statement runs are marked by the next
// one, so the statements follow the rate of deliveries without a timer.
type completer struct {
	d    *Dispatcher
	ctx  context.Context
	in   chan delivered
	done chan struct{}
}

func (d *Dispatcher) startCompleter(ctx context.Context) *completer {
	c := &completer{d: d, ctx: ctx, in: make(chan delivered, maxMarkBatch), done: make(chan struct{})}
	go c.loop()
	return c
}

// add hands a delivered message over to be marked. It waits while maxMarkBatch wait
// already: a database slower than the sinks holds the deliveries back, and with them
// the claims.
func (c *completer) add(x delivered) { c.in <- x }

// close marks what is left and returns once it is recorded (or RecordTimeout has
// passed).
func (c *completer) close() {
	close(c.in)
	<-c.done
}

func (c *completer) loop() {
	defer close(c.done)
	batch := make([]delivered, 0, maxMarkBatch)
	for first := range c.in {
		batch = append(batch[:0], first)
	fill:
		for len(batch) < maxMarkBatch {
			select {
			case x, ok := <-c.in:
				if !ok {
					break fill
				}
				batch = append(batch, x)
			default:
				break fill
			}
		}
		c.d.markPublished(c.ctx, batch)
	}
}

// markPublished marks a batch of delivered messages published, each only if its
// fencing token is still its claim's, in one statement.
func (d *Dispatcher) markPublished(ctx context.Context, batch []delivered) {
	marks := make([]driver.OutboxMark, len(batch))
	for k, x := range batch {
		marks[k] = driver.OutboxMark{ID: x.m.ID, Token: x.m.FencingToken}
	}
	mctx, cancel := context.WithTimeout(ctx, d.config.RecordTimeout)
	published, err := d.ex.OutboxMarkPublishedMany(mctx, marks)
	cancel()
	if err != nil {
		// Delivered but not marked (the database failed or did not answer in time):
		// the leases end, the messages are delivered again with the same idempotency
		// keys, and the receivers drop the copies. A mark still running on the server
		// is fenced by the tokens: it marks a message only while this claim owns it.
		d.config.Logger.ErrorContext(ctx, "hookinbox: outbox: error marking published; the messages are delivered again when their leases end",
			"messages", len(batch), "first_outbox_id", batch[0].m.ID, "error", err.Error())
	}
	slices.Sort(published)
	for _, x := range batch {
		result := "delivered"
		if err == nil {
			if _, ok := slices.BinarySearch(published, x.m.ID); !ok {
				result = "stale"
				d.config.Logger.WarnContext(ctx, "hookinbox: outbox: lease lost before marking; a later claim owns the message",
					"outbox_id", x.m.ID, "fencing_token", x.m.FencingToken)
			}
		}
		if d.config.ObserveFunc != nil {
			d.config.ObserveFunc(x.sink, result, time.Since(x.start))
		}
	}
}
