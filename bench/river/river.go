package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/driver/pgxdriver"
	"github.com/hookinbox/hookinbox/examples/billing"
)

// invoicePaidArgs is a River job carrying the same verified Stripe event a hookinbox
// receipt stores: its id and its body (River keeps args as jsonb, hookinbox the
// payload).
type invoicePaidArgs struct {
	EventID string          `json:"event_id"`
	Payload json.RawMessage `json:"payload"`
}

func (invoicePaidArgs) Kind() string { return "stripe_invoice_paid" }

// invoicePaidWorker applies the event with billing's own invoice.paid handler (the
// function hookinbox's workers call: the same statements, in the same order) inside a
// transaction that also completes the job with river.JobCompleteTx, so the job's
// completion commits with the business write or not at all: River's exactly-once
// variant, the one comparable with hookinbox.
type invoicePaidWorker struct {
	river.WorkerDefaults[invoicePaidArgs]

	pool     *pgxpool.Pool
	handler  hookinbox.HandlerFunc[pgx.Tx]
	progress *progress
	failed   *atomic.Int64
}

func (w *invoicePaidWorker) Work(ctx context.Context, job *river.Job[invoicePaidArgs]) error {
	err := w.work(ctx, job)
	if err != nil {
		w.failed.Add(1)
		return err
	}
	w.progress.add()
	return nil
}

func (w *invoicePaidWorker) work(ctx context.Context, job *river.Job[invoicePaidArgs]) error {
	tx, err := w.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after commit
	ev := hookinbox.Event{
		Provider: "stripe", Endpoint: "billing", ID: job.Args.EventID,
		Type: billing.TypeInvoicePaid, Payload: job.Args.Payload, Attempt: job.Attempt,
	}
	if err := w.handler(ctx, tx, ev); err != nil {
		return err
	}
	if _, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// RiverConfig is the River side's configuration, printed with its result.
type RiverConfig struct {
	Workers           int    `json:"workers"`
	PoolConns         int    `json:"pool_conns"`
	FetchCooldown     string `json:"fetch_cooldown"`
	FetchPollInterval string `json:"fetch_poll_interval"`
	InsertBatch       int    `json:"insert_batch"`
	ArgsIndex         bool   `json:"args_index"`
}

func runRiver(ctx context.Context, o *options, admin *pgxpool.Pool) (*Result, error) {
	schema := fmt.Sprintf("bench_river_%d", os.Getpid())
	if err := createSchema(ctx, admin, schema); err != nil {
		return nil, fmt.Errorf("error creating schema: %w", err)
	}
	if !o.keepSchemas {
		defer dropSchema(admin, schema)
	}

	// Setup, not measured, on a pool of its own that is closed before the measured
	// window, so that its backends' statistics are reported before it starts.
	setupStart := time.Now()
	const batch = 1000
	if err := withPool(ctx, o.databaseURL, schema, o.pool, func(setup *pgxpool.Pool) error {
		migrator, err := rivermigrate.New(riverpgxv5.New(setup), &rivermigrate.Config{Logger: quietLogger()})
		if err != nil {
			return err
		}
		if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
			return fmt.Errorf("error running River's migrations: %w", err)
		}
		if o.riverNoArgsIndex {
			if _, err := setup.Exec(ctx, `DROP INDEX river_job_args_index`); err != nil {
				return fmt.Errorf("error dropping River's args index: %w", err)
			}
		}
		// billing's tables, and hookinbox's (for hookinbox_outbox, where billing's
		// handler writes its message; hookinbox_inbox stays empty on this side).
		if err := billing.Migrate(ctx, pgxdriver.New(setup)); err != nil {
			return err
		}
		if err := pgxdriver.New(setup).Migrate(ctx); err != nil {
			return err
		}
		// An insert-only client (no queues): the backlog, inserted in batches.
		inserter, err := river.NewClient(riverpgxv5.New(setup), &river.Config{Logger: quietLogger()})
		if err != nil {
			return err
		}
		params := make([]river.InsertManyParams, 0, batch)
		for i := 1; i <= o.events; i++ {
			id, payload := stripeInvoicePaid(i)
			params = append(params, river.InsertManyParams{Args: invoicePaidArgs{EventID: id, Payload: payload}})
			if len(params) == batch || i == o.events {
				if _, err := inserter.InsertMany(ctx, params); err != nil {
					return fmt.Errorf("error inserting jobs: %w", err)
				}
				params = params[:0]
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	res := &Result{
		Side: "river", Items: o.events, Unit: "jobs",
		Config: RiverConfig{
			Workers: o.workers, PoolConns: o.pool, InsertBatch: batch, ArgsIndex: !o.riverNoArgsIndex,
			FetchCooldown: o.riverFetchCooldown.String(), FetchPollInterval: o.riverFetchPoll.String(),
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
	var failed atomic.Int64
	workers := river.NewWorkers()
	river.AddWorker(workers, &invoicePaidWorker{
		pool: pool, handler: billing.Handlers[pgx.Tx]()[billing.TypeInvoicePaid], progress: prog, failed: &failed,
	})
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		FetchCooldown:     o.riverFetchCooldown,
		FetchPollInterval: o.riverFetchPoll,
		Logger:            quietLogger(),
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: o.workers}},
		Workers:           workers,
	})
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
	o.logf("river      setup: %d jobs inserted in %.1fs, checkpoint %s; measuring", o.events, res.SetupSeconds, res.Checkpoint)

	remaining := func(ctx context.Context) (int64, error) {
		var n int64
		// The states a job leaves for completed (or for discarded or cancelled, which
		// the verification reports), found through River's index on state.
		err := pool.QueryRow(ctx, `
SELECT count(*) FROM river_job
 WHERE state IN ('available', 'pending', 'retryable', 'running', 'scheduled')`).Scan(&n)
		return n, err
	}
	stopWatch := make(chan struct{})
	watch := watchOthers(admin, stopWatch)
	stmts.on.Store(true)
	prog.begin()
	if err := client.Start(ctx); err != nil {
		return nil, err
	}
	elapsed, werr := waitDone(ctx, prog, o.poll, o.timeout, remaining)
	stmts.on.Store(false)
	close(stopWatch)
	res.Interference = <-watch
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	serr := client.Stop(stopCtx)
	cancel()
	if werr != nil {
		return nil, werr
	}
	if serr != nil {
		return nil, fmt.Errorf("error stopping River: %w", serr)
	}
	fill(res, prog, elapsed, failed.Load(), stmts, o.statements)
	pool.Close()
	if res.DB, err = counterDelta(ctx, admin, before, o.events); err != nil {
		return nil, err
	}

	err = withPool(ctx, o.databaseURL, schema, 2, func(pool *pgxpool.Pool) error {
		v, err := verifyBilling(ctx, pool, o.events)
		if err != nil {
			return err
		}
		if err := pool.QueryRow(ctx, `
SELECT count(*) FILTER (WHERE state <> 'completed'), coalesce(sum(attempt), 0) FROM river_job`).
			Scan(&v.Unfinished, &v.Attempts); err != nil {
			return err
		}
		if v.Unfinished != 0 {
			v.Problems = append(v.Problems, fmt.Sprintf("%d jobs not completed", v.Unfinished))
		}
		res.Verified = v
		return nil
	})
	if err != nil {
		return nil, err
	}
	if res.Queue, err = tableStats(ctx, admin, schema, "river_job"); err != nil {
		return nil, err
	}
	return res, nil
}

// waitDone polls remaining until it reports 0, and returns the time from the start of
// the progress until that poll. While the in-process count says items are left, the
// database is polled only once a second (the polls scan the queue table, and would
// take CPU from the workers); once it says all are committed, every interval.
func waitDone(ctx context.Context, prog *progress, interval, timeout time.Duration, remaining func(context.Context) (int64, error)) (time.Duration, error) {
	const slowPoll = time.Second
	deadline := time.Now().Add(timeout)
	t := time.NewTicker(interval)
	defer t.Stop()
	var polled time.Time
	for {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-t.C:
		}
		if prog.done.Load() < prog.n && time.Since(polled) < slowPoll {
			continue
		}
		polled = time.Now()
		n, err := remaining(ctx)
		if err != nil {
			return 0, fmt.Errorf("error polling progress: %w", err)
		}
		if n == 0 {
			return time.Since(prog.start), nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("timed out after %s with %d items left (%d commits counted)", timeout, n, prog.done.Load())
		}
	}
}

func fill(res *Result, prog *progress, elapsed time.Duration, failed int64, stmts *statementCounter, bySQL bool) {
	res.Statements = stmts.total.Load()
	res.StatementsPerItem = float64(res.Statements) / float64(res.Items)
	if bySQL {
		res.BySQL = stmts.counts(res.Items)
	}
	res.Seconds = elapsed.Seconds()
	res.PerSec = float64(res.Items) / elapsed.Seconds()
	res.LastCommitSeconds = prog.lastCommit().Seconds()
	res.Slices = prog.slices()
	res.Failed = failed
}

// quietLogger logs warnings and errors only, to stderr, so a failure during the run
// is seen and the report stays readable.
func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}
