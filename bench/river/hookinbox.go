package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/driver/pgxdriver"
	"github.com/hookinbox/hookinbox/examples/billing"
	"github.com/hookinbox/hookinbox/provider"
)

// attemptCounter is the Observer that counts the workers' attempts: a processed
// attempt is reported after its transaction committed.
type attemptCounter struct {
	progress *progress
	failed   atomic.Int64
}

func (c *attemptCounter) Delivery(hookinbox.DeliveryInfo) {}

func (c *attemptCounter) Attempt(a hookinbox.AttemptInfo) {
	if a.Result == hookinbox.AttemptProcessed { // else failed, timeout or already processed
		c.progress.add()
		return
	}
	c.failed.Add(1)
}

// HookinboxConfig is the hookinbox side's configuration, printed with its result.
type HookinboxConfig struct {
	Workers   int    `json:"workers"`
	BatchSize int    `json:"batch_size"`
	PoolConns int    `json:"pool_conns"`
	Lease     string `json:"lease"`
	Timeout   string `json:"statement_timeout"`
	Poll      string `json:"poll_interval"`
}

func runHookinbox(ctx context.Context, o *options, admin *pgxpool.Pool) (*Result, error) {
	schema := fmt.Sprintf("bench_hookinbox_%d", os.Getpid())
	if err := createSchema(ctx, admin, schema); err != nil {
		return nil, fmt.Errorf("error creating schema: %w", err)
	}
	if !o.keepSchemas {
		defer dropSchema(admin, schema)
	}
	stripe, err := provider.NewStripe(provider.StripeConfig{Secrets: []string{"whsec_bench"}})
	if err != nil {
		return nil, err
	}
	wc := hookinbox.WorkerConfig{Concurrency: o.workers, BatchSize: o.batchSize}
	newInbox := func(pool *pgxpool.Pool, obs hookinbox.Observer) (*hookinbox.Inbox[pgx.Tx], error) {
		inbox, err := hookinbox.New(pgxdriver.New(pool), &hookinbox.Config{
			Endpoints: []hookinbox.EndpointConfig{{Name: "billing", Verifier: stripe, Mode: hookinbox.ModeAsync}},
			Worker:    wc,
			Logger:    quietLogger(),
			Observer:  obs,
		})
		if err != nil {
			return nil, err
		}
		billing.Register(inbox, "billing")
		return inbox, nil
	}

	// Setup, not measured, on a pool of its own that is closed before the measured
	// window, so that its backends' statistics are reported before it starts: the
	// migrations, and the backlog of N async receipts committed as pending, received
	// concurrently.
	setupStart := time.Now()
	if err := withPool(ctx, o.databaseURL, schema, o.pool, func(setup *pgxpool.Pool) error {
		inbox, err := newInbox(setup, nil)
		if err != nil {
			return err
		}
		if err := inbox.Migrate(ctx); err != nil {
			return err
		}
		if err := billing.Migrate(ctx, pgxdriver.New(setup)); err != nil {
			return err
		}
		return receiveAll(ctx, inbox, o.events, o.workers)
	}); err != nil {
		return nil, err
	}
	eff := wc.WithDefaults()
	res := &Result{
		Side: "hookinbox", Items: o.events, Unit: "events",
		Config: HookinboxConfig{
			Workers: eff.Concurrency, BatchSize: eff.BatchSize, PoolConns: o.pool, Lease: eff.Lease.String(),
			Timeout: eff.StatementTimeout.String(), Poll: eff.PollInterval.String(),
		},
	}
	res.SetupSeconds = time.Since(setupStart).Seconds()

	stmts := newStatementCounter()
	pool, err := newPool(ctx, o.databaseURL, schema, o.pool, stmts)
	if err != nil {
		return nil, err
	}
	defer pool.Close() // closed below; a second Close is a no-op
	if err := warm(ctx, pool, o.pool); err != nil {
		return nil, err
	}
	prog := newProgress(o.events)
	counter := &attemptCounter{progress: prog}
	inbox, err := newInbox(pool, counter)
	if err != nil {
		return nil, err
	}
	if o.analyze {
		if err := analyzeSchema(ctx, admin, schema); err != nil {
			return nil, err
		}
	}
	res.Checkpoint = checkpoint(ctx, admin)
	before, err := readCounters(ctx, admin)
	if err != nil {
		return nil, err
	}
	o.logf("hookinbox  setup: %d async receipts received in %.1fs, checkpoint %s; measuring", o.events, res.SetupSeconds, res.Checkpoint)

	op := inbox.Operator()
	remaining := func(ctx context.Context) (int64, error) {
		s, err := op.Stats(ctx)
		if err != nil {
			return 0, err
		}
		return s.Unprocessed, nil
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	stopWatch := make(chan struct{})
	watch := watchOthers(admin, stopWatch)
	stmts.on.Store(true)
	prog.begin()
	go func() { done <- inbox.Run(runCtx) }()
	elapsed, werr := waitDone(ctx, prog, o.poll, o.timeout, remaining)
	stmts.on.Store(false)
	close(stopWatch)
	res.Interference = <-watch
	stop()
	rerr := <-done
	if werr != nil {
		return nil, werr
	}
	if rerr != nil {
		return nil, fmt.Errorf("error from Run: %w", rerr)
	}
	fill(res, prog, elapsed, counter.failed.Load(), stmts, o.statements)
	pool.Close()
	if res.DB, err = counterDelta(ctx, admin, before, o.events); err != nil {
		return nil, err
	}

	err = withPool(ctx, o.databaseURL, schema, 2, func(pool *pgxpool.Pool) error {
		v, err := verifyBilling(ctx, pool, o.events)
		if err != nil {
			return err
		}
		s, err := hookinbox.NewOperator(pgxdriver.New(pool).Executor(), nil).Stats(ctx)
		if err != nil {
			return err
		}
		v.Unfinished = s.Unprocessed
		if s.Unprocessed != 0 || s.NeedsReview != 0 {
			v.Problems = append(v.Problems, fmt.Sprintf("%d unprocessed, %d needing review", s.Unprocessed, s.NeedsReview))
		}
		if err := pool.QueryRow(ctx, `SELECT coalesce(sum(attempts), 0) FROM hookinbox_inbox`).Scan(&v.Attempts); err != nil {
			return err
		}
		res.Verified = v
		return nil
	})
	if err != nil {
		return nil, err
	}
	if res.Queue, err = tableStats(ctx, admin, schema, "hookinbox_inbox"); err != nil {
		return nil, err
	}
	return res, nil
}

// receiveAll receives events 1..n on the async endpoint with conc goroutines.
func receiveAll[TTx any](ctx context.Context, inbox *hookinbox.Inbox[TTx], n, conc int) error {
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range conc {
		wg.Go(func() {
			for {
				i := int(next.Add(1))
				if i > n || ctx.Err() != nil {
					return
				}
				id, payload := stripeInvoicePaid(i)
				out, err := inbox.Receive(ctx, hookinbox.Event{
					Endpoint: "billing", ID: id, Type: billing.TypeInvoicePaid, Payload: payload,
				})
				if err == nil && out != hookinbox.OutcomeAccepted {
					err = fmt.Errorf("event %s: outcome %q, want %q", id, out, hookinbox.OutcomeAccepted)
				}
				if err != nil {
					mu.Lock()
					firstErr = errors.Join(firstErr, err)
					mu.Unlock()
					cancel()
					return
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return fmt.Errorf("error receiving the backlog: %w", firstErr)
	}
	return nil
}
