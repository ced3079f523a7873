package hookinbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/internal/groupcommit"
)

// ErrUnknownEndpoint is returned for an endpoint name that is not configured.
var ErrUnknownEndpoint = errors.New("unknown endpoint")

// Inbox receives, de-duplicates and processes webhook events on one database. It is
// generic over the driver's transaction type, which handlers receive.
//
// An Inbox is safe for concurrent use. Register handlers before serving requests.
type Inbox[TTx any] struct {
	driver    driver.Driver[TTx]
	endpoints map[string]*endpoint
	worker    WorkerConfig
	logger    *slog.Logger
	observer  Observer
	groups    GroupObserver // the observer, when it is one; else nil
	trace     tracing

	mu       sync.RWMutex
	handlers map[handlerKey]HandlerFunc[TTx]
	// batches holds the set-based form of the handlers registered with HandleBatch.
	batches map[handlerKey]BatchHandlerFunc[TTx]

	// wake announces new pending receipts to this process's workers, so they do not
	// wait for their next poll. It never blocks a receiver.
	wake chan struct{}
	// busy counts the workers between a wake and going idle again; pending is set
	// by every announcement. Together they let an announcement skip the wake while a
	// worker is at work: that worker claims again after its batch and takes what
	// arrived meanwhile, as one batch (see announce).
	busy    atomic.Int32
	pending atomic.Bool
	// omitRequestRecord is Config.OmitRequestRecord.
	omitRequestRecord bool
	// lastClaim is when a worker last started a claim (Unix nanoseconds).
	lastClaim atomic.Int64
	// handoff carries receipts accepted already leased to this process's workers
	// (handoff.go).
	handoff handoff
	// processParked is the pause test's broken variant: workers process receipts
	// parked at their insert; staleHandoffs, the hand-off test's: workers process
	// hand-offs under the lease they got at the insert, however long they waited.
	processParked, staleHandoffs bool
	// abandonHandoffs is the stop test's broken variant: a stop drops the receipts
	// that wait for the workers.
	abandonHandoffs bool
	// commitNotTheHandlers is the hybrid outbox test's broken variant: a sync
	// delivery's failed commit is not the handler's failure, even when the handler's
	// own statement, sent with COMMIT, failed it.
	commitNotTheHandlers bool
	// roomByReceivers is the room test's broken variant: the receivers of failed
	// batches return their room, as they once did, not the flusher.
	roomByReceivers bool
	// claimBatches is the batch hand-off test's broken variant: ReceiveBatch's
	// receipts are left to the claims, as they once were.
	claimBatches bool
	// untracedHandoffs is the trace test's broken variant: receipts are handed off
	// without the trace context of the request that brought them.
	untracedHandoffs bool
	// stopWithoutWaiting is the stop test's other broken variant: the hand-off closes
	// without waiting for the accept batches in flight.
	stopWithoutWaiting bool

	// accepter commits the receipts of async endpoints and ignored events in batches.
	accepter *groupcommit.Committer[*driver.InboxInsertParams, bool]
	// batchMax bounds the events of a ReceiveBatch per statement (async) and per
	// transaction (sync and hybrid): the group commits' MaxBatch.
	batchMax [2]int
	// syncer commits sync and hybrid deliveries in shared transactions.
	syncer *groupcommit.Committer[*syncDelivery[TTx], syncResult]

	// remote wakes the workers of other processes.
	remote *remoteWaker

	// claims counts the workers' claim statements, for tests that wait on them.
	claims atomic.Int64
}

type endpoint struct {
	EndpointConfig
	provider string
}

type handlerKey struct{ endpoint, eventType string }

// New returns an inbox on driver d. It validates config and does not touch the
// database; call Migrate to create or update the schema.
func New[TTx any](d driver.Driver[TTx], config *Config) (*Inbox[TTx], error) {
	if d == nil {
		return nil, errors.New("hookinbox: a driver is required")
	}
	if config == nil {
		config = &Config{}
	}
	i := &Inbox[TTx]{
		driver:    d,
		endpoints: make(map[string]*endpoint, len(config.Endpoints)),
		worker:    config.Worker.WithDefaults(),
		logger:    config.Logger,
		handlers:  make(map[handlerKey]HandlerFunc[TTx]),
		batches:   make(map[handlerKey]BatchHandlerFunc[TTx]),
		wake:      make(chan struct{}, 1),

		omitRequestRecord: config.OmitRequestRecord,
	}
	if i.logger == nil {
		i.logger = slog.Default()
	}
	i.observer = config.Observer
	i.trace = newTracing(config.TracerProvider)
	if i.observer == nil {
		i.observer = nopObserver{}
	}
	if g, ok := i.observer.(GroupObserver); ok {
		i.groups = g
	}
	if err := i.worker.validate(); err != nil {
		return nil, fmt.Errorf("hookinbox: %w", err)
	}
	// Two sync flushers: at 8 senders, groups of about four deliveries share their
	// transaction and, with set-based handlers, their statements (measured: 3,230 and
	// 3,340 deliveries/s over HTTP with 2, 2,620 with 4, 1,980 and 2,090 with 8).
	acceptFlushers, syncFlushers := 2, 2
	if d.Name() == "sqlite" {
		acceptFlushers, syncFlushers = 1, 1 // one writer at a time: more would only queue for it
	}
	accept := config.Accept.withDefaults(acceptFlushers, 500)
	if err := accept.validate("accept"); err != nil {
		return nil, fmt.Errorf("hookinbox: %w", err)
	}
	i.accepter = newAccepter(d.Executor(), accept, i.observeGroup, i.handOff, i.handBack)
	sync := config.Sync.withDefaults(syncFlushers, 32)
	if err := sync.validate("sync"); err != nil {
		return nil, fmt.Errorf("hookinbox: %w", err)
	}
	i.syncer = i.newSyncer(sync)
	i.batchMax = [2]int{accept.MaxBatch, sync.MaxBatch}
	i.remote = newRemoteWaker(d, config.PollOnly)
	for _, ec := range config.Endpoints {
		ec = ec.withDefaults()
		if err := ec.validate(); err != nil {
			return nil, fmt.Errorf("hookinbox: %w", err)
		}
		if _, dup := i.endpoints[ec.Name]; dup {
			return nil, fmt.Errorf("hookinbox: endpoint %q is configured twice", ec.Name)
		}
		i.endpoints[ec.Name] = &endpoint{EndpointConfig: ec, provider: ec.Verifier.Name()}
	}
	return i, nil
}

// Handle registers fn for events of eventType received on the named endpoint. The
// event type "*" matches every type that has no handler of its own. Handle panics on
// an unknown endpoint or a second handler for the same type: both are wiring mistakes.
func (i *Inbox[TTx]) Handle(endpointName, eventType string, fn HandlerFunc[TTx]) {
	if fn == nil {
		panic("hookinbox: Handle needs an event type and a function")
	}
	i.register(endpointName, eventType, fn, nil)
}

// HandleBatch registers fn, the set-based form of a handler, for events of eventType
// (or "*") on the named endpoint, as Handle does. Sync and hybrid deliveries that share
// a transaction (Config.Sync) and this registration are applied by one call of fn;
// every other caller (a worker's attempt, a delivery alone in its transaction) passes
// one event. See BatchHandlerFunc for what fn must guarantee.
func (i *Inbox[TTx]) HandleBatch(endpointName, eventType string, fn BatchHandlerFunc[TTx]) {
	if fn == nil {
		panic("hookinbox: HandleBatch needs an event type and a function")
	}
	one := func(ctx context.Context, tx TTx, ev Event) error { return fn(ctx, tx, []Event{ev}) }
	i.register(endpointName, eventType, one, fn)
}

func (i *Inbox[TTx]) register(endpointName, eventType string, fn HandlerFunc[TTx], batch BatchHandlerFunc[TTx]) {
	if _, ok := i.endpoints[endpointName]; !ok {
		panic(fmt.Sprintf("hookinbox: Handle on unknown endpoint %q", endpointName))
	}
	if eventType == "" {
		panic("hookinbox: Handle needs an event type and a function")
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	k := handlerKey{endpointName, eventType}
	if _, dup := i.handlers[k]; dup {
		panic(fmt.Sprintf("hookinbox: a handler for %q on endpoint %q is already registered", eventType, endpointName))
	}
	i.handlers[k] = fn
	if batch != nil {
		i.batches[k] = batch
	}
}

func (i *Inbox[TTx]) handler(endpointName, eventType string) HandlerFunc[TTx] {
	fn, _, _ := i.handlerFor(endpointName, eventType)
	return fn
}

// handlerFor returns the handler of an event, its set-based form if it was registered
// with HandleBatch, and the registration's key.
func (i *Inbox[TTx]) handlerFor(endpointName, eventType string) (HandlerFunc[TTx], BatchHandlerFunc[TTx], handlerKey) {
	i.mu.RLock()
	defer i.mu.RUnlock()
	k := handlerKey{endpointName, eventType}
	fn, ok := i.handlers[k]
	if !ok {
		k.eventType = "*"
		fn = i.handlers[k]
	}
	return fn, i.batches[k], k
}

// Driver returns the inbox's driver.
func (i *Inbox[TTx]) Driver() driver.Driver[TTx] { return i.driver }

// Migrate creates or updates the database schema. It is safe to run twice and from
// several processes at once.
func (i *Inbox[TTx]) Migrate(ctx context.Context) error {
	if err := i.driver.Migrate(ctx); err != nil {
		return fmt.Errorf("error migrating: %w", err)
	}
	return nil
}

func (i *Inbox[TTx]) notifyWorkers() {
	select {
	case i.wake <- struct{}{}:
	default:
	}
}

// observeGroup tells the group observer, if any, of a group commit.
func (i *Inbox[TTx]) observeGroup(g GroupInfo) {
	if i.groups != nil {
		i.groups.Group(g)
	}
}
