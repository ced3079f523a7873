package hookinbox_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// An endpoint paused in the database (the console's or the CLI's pause) holds its
// receipts back from every process's workers, and a resume gives every one of them
// back: none processed while paused, none lost, none processed twice.

// pauseReport is what a pause and resume came to.
type pauseReport struct {
	// claimedWhilePaused counts the paused endpoint's receipts that a worker took
	// (an attempt counted) while it was paused, and processedWhilePaused those whose
	// handler ran then.
	claimedWhilePaused, processedWhilePaused int
	// stillParked counts its receipts still parked after the resume.
	stillParked int
	// lost counts its receipts never processed; doubled, receipts processed twice.
	lost, doubled int
}

// pauseWrap are the test's broken variants: workers whose driver ignores the pause
// (in their claims, or in the inserts that hand receipts to them), workers that
// process a receipt handed to them parked, and an operator whose resume leaves what
// was parked parked.
type pauseWrap[TTx any] struct {
	workers       func(driver.Driver[TTx]) driver.Driver[TTx]
	processParked bool
	operator      func(driver.Executor) driver.Executor
}

// pauseScenario pauses the async endpoint between receipts and resumes it, with two
// processes' workers running throughout. parked is the dialect's condition for a
// parked receipt (available_at = driver.ParkedAt).
func pauseScenario[TTx any](t *testing.T, w *world[TTx], parked string, wrap pauseWrap[TTx]) pauseReport {
	t.Helper()
	op := w.newDriver(t, 2).Executor()
	if wrap.operator != nil {
		op = wrap.operator(op)
	}
	apply := func(action string) {
		t.Helper()
		if _, err := op.ConsoleApply(w.ctx, &driver.ConsoleAction{Action: action, Actor: "test", Target: "endpoint " + epAsync, Endpoint: epAsync}); err != nil {
			t.Fatal(err)
		}
	}
	// Two processes' workers; the hybrid endpoint's first attempt fails in its request,
	// so its receipts go to the same workers: the controls that show they claimed.
	var procs []*hookinbox.Inbox[TTx]
	for range 2 {
		d := w.newDriver(t, 4)
		if wrap.workers != nil {
			d = wrap.workers(d)
		}
		inbox := buildTestInbox(t, d, setupOpts{noBilling: true, worker: hookinbox.WorkerConfig{BatchSize: 4}})
		if wrap.processParked {
			inbox.ProcessParkedForTest()
		}
		inbox.Handle(epAsync, "invoice.paid", w.effect)
		inbox.Handle(epHybrid, "invoice.paid", func(ctx context.Context, tx TTx, ev hookinbox.Event) error {
			if ev.Attempt == 1 {
				return errors.New("the first attempt fails, so that a worker takes it")
			}
			return w.effect(ctx, tx, ev)
		})
		procs = append(procs, inbox)
	}
	ctx, cancel := context.WithCancel(w.ctx)
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Go(func() { _ = p.Run(ctx) })
	}
	defer func() { cancel(); wg.Wait() }()
	receive := func(endpoint, prefix string, n int) {
		t.Helper()
		for i := range n {
			mustReceive(t, procs[i%2], invoiceEvent(endpoint, fmt.Sprintf("%s_%d", prefix, i), "invoice.paid", "in_1", 1))
		}
	}
	effects := func(prefix string) int {
		return w.count(t, fmt.Sprintf(`SELECT count(*) FROM test_effects WHERE event_id LIKE '%s_%%'`, prefix))
	}
	waitEffects := func(prefix string, want int) bool {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for effects(prefix) < want {
			if time.Now().After(deadline) {
				return false
			}
			time.Sleep(10 * time.Millisecond) // polling the asserted state
		}
		return true
	}

	receive(epAsync, "before", 10)
	if !waitEffects("before", 10) {
		t.Fatal("receipts before the pause not processed within 60 s")
	}
	apply(driver.ActionPause)
	receive(epAsync, "paused", 30)
	receive(epHybrid, "controlA", 10)
	if !waitEffects("controlA", 10) {
		t.Fatal("the hybrid receipts sent while async was paused were not processed within 60 s")
	}
	var r pauseReport
	r.claimedWhilePaused = w.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE event_id LIKE 'paused_%' AND attempts > 0`)
	r.processedWhilePaused = effects("paused")
	apply(driver.ActionResume)
	receive(epHybrid, "controlB", 10)
	if !waitEffects("controlB", 10) {
		t.Fatal("the hybrid receipts sent after the resume were not processed within 60 s")
	}
	r.stillParked = w.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE event_id LIKE 'paused_%' AND `+parked)
	if r.stillParked == 0 && !waitEffects("paused", 30) {
		t.Log("the paused receipts were not all processed within 60 s")
	}
	r.lost = 30 - effects("paused")
	r.doubled = w.count(t, `SELECT count(*) FROM (SELECT event_id FROM test_effects GROUP BY event_id HAVING count(*) > 1) AS d`)
	return r
}

// The dialects' conditions for a parked receipt.
var (
	pgParked     = `available_at = '9999-01-01 00:00:00+00'`
	sqliteParked = fmt.Sprintf(`available_at = %d`, driver.ParkedAt.UnixMicro())
)

func TestPause_NothingProcessedWhilePausedNothingLostAfter(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, r pauseReport) {
		if r != (pauseReport{}) {
			t.Fatalf("%+v: want no receipt claimed while paused, none left parked, lost or doubled", r)
		}
	}
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		check(t, pauseScenario(t, postgresHarness.open(t), pgParked, pauseWrap[pgx.Tx]{}))
	})
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		check(t, pauseScenario(t, sqliteHarness.open(t), sqliteParked, pauseWrap[*sql.Tx]{}))
	})
}

// TestPause_BrokenVariantsAreCaught runs the scenario with workers that ignore the
// pause, and with a resume that only changes the stored state: the report shows each.
func TestPause_BrokenVariantsAreCaught(t *testing.T) {
	t.Parallel()
	t.Run("postgres/claim-ignores-the-pause", func(t *testing.T) {
		t.Parallel()
		w := postgresHarness.open(t)
		r := pauseScenario(t, w, pgParked, pauseWrap[pgx.Tx]{workers: ignorePause[pgx.Tx]})
		if r.claimedWhilePaused == 0 {
			t.Fatalf("%+v: workers that ignore the pause took nothing while paused; the test would not notice", r)
		}
	})
	t.Run("sqlite/claim-ignores-the-pause", func(t *testing.T) {
		t.Parallel()
		w := sqliteHarness.open(t)
		r := pauseScenario(t, w, sqliteParked, pauseWrap[*sql.Tx]{workers: ignorePause[*sql.Tx]})
		if r.claimedWhilePaused == 0 {
			t.Fatalf("%+v: workers that ignore the pause took nothing while paused; the test would not notice", r)
		}
	})
	for _, broken := range []struct {
		name string
		pg   pauseWrap[pgx.Tx]
		lite pauseWrap[*sql.Tx]
	}{
		{"insert-ignores-the-pause", pauseWrap[pgx.Tx]{workers: insertIgnoringPause[pgx.Tx]}, pauseWrap[*sql.Tx]{workers: insertIgnoringPause[*sql.Tx]}},
		{"worker-processes-what-is-parked", pauseWrap[pgx.Tx]{processParked: true}, pauseWrap[*sql.Tx]{processParked: true}},
	} {
		check := func(t *testing.T, r pauseReport) {
			if r.processedWhilePaused == 0 {
				t.Fatalf("%+v: nothing processed while paused; the test would not notice", r)
			}
		}
		t.Run("postgres/"+broken.name, func(t *testing.T) {
			t.Parallel()
			check(t, pauseScenario(t, postgresHarness.open(t), pgParked, broken.pg))
		})
		t.Run("sqlite/"+broken.name, func(t *testing.T) {
			t.Parallel()
			check(t, pauseScenario(t, sqliteHarness.open(t), sqliteParked, broken.lite))
		})
	}
	t.Run("postgres/resume-keeps-them-parked", func(t *testing.T) {
		t.Parallel()
		w := postgresHarness.open(t)
		r := pauseScenario(t, w, pgParked, pauseWrap[pgx.Tx]{operator: forgetfulResume(w.exec, t)})
		if r.stillParked == 0 || r.lost == 0 {
			t.Fatalf("%+v: a resume that leaves the receipts parked lost nothing; the test would not notice", r)
		}
	})
	t.Run("sqlite/resume-keeps-them-parked", func(t *testing.T) {
		t.Parallel()
		w := sqliteHarness.open(t)
		r := pauseScenario(t, w, sqliteParked, pauseWrap[*sql.Tx]{operator: forgetfulResume(w.exec, t)})
		if r.stillParked == 0 || r.lost == 0 {
			t.Fatalf("%+v: a resume that leaves the receipts parked lost nothing; the test would not notice", r)
		}
	})
}

// pausingDriver is a driver whose workers' claims are made by an executor of the
// test's choosing.
type pausingDriver[TTx any] struct {
	driver.Driver[TTx]
	wrap func(driver.Executor) driver.Executor
}

func (d *pausingDriver[TTx]) Executor() driver.Executor { return d.wrap(d.Driver.Executor()) }

// ignorePause is the broken variant of the workers: each claim resumes every paused
// endpoint first and pauses it again after, so paused receipts are taken as if the
// claim did not read the pause.
func ignorePause[TTx any](d driver.Driver[TTx]) driver.Driver[TTx] {
	return &pausingDriver[TTx]{Driver: d, wrap: func(ex driver.Executor) driver.Executor { return &pauseIgnorer{Executor: ex} }}
}

type pauseIgnorer struct{ driver.Executor }

func (p *pauseIgnorer) InboxClaim(ctx context.Context, params *driver.InboxClaimParams) ([]*hookinboxtype.Receipt, error) {
	return unpaused(ctx, p.Executor, func() ([]*hookinboxtype.Receipt, error) { return p.Executor.InboxClaim(ctx, params) })
}

// unpaused runs fn with every paused endpoint resumed for the while (without
// releasing what is parked), and pauses them again.
func unpaused[T any](ctx context.Context, ex driver.Executor, fn func() (T, error)) (T, error) {
	var zero T
	states, err := ex.ConsoleEndpointStates(ctx)
	if err != nil {
		return zero, err
	}
	var paused []string
	for _, s := range states {
		if s.Paused {
			paused = append(paused, s.Endpoint)
			if _, err := ex.ConsoleApply(ctx, &driver.ConsoleAction{Action: driver.ActionResume, Actor: "broken", Target: s.Endpoint, Endpoint: s.Endpoint}); err != nil {
				return zero, err
			}
		}
	}
	v, err := fn()
	for _, e := range paused {
		if _, perr := ex.ConsoleApply(ctx, &driver.ConsoleAction{Action: driver.ActionPause, Actor: "broken", Target: e, Endpoint: e}); perr != nil && err == nil {
			err = perr
		}
	}
	return v, err
}

// insertIgnoringPause is the broken variant of the receivers: their inserts lease
// receipts to their workers whatever the endpoint's state.
func insertIgnoringPause[TTx any](d driver.Driver[TTx]) driver.Driver[TTx] {
	return &pausingDriver[TTx]{Driver: d, wrap: func(ex driver.Executor) driver.Executor { return &insertPauseIgnorer{Executor: ex} }}
}

type insertPauseIgnorer struct{ driver.Executor }

func (p *insertPauseIgnorer) InboxInsertMany(ctx context.Context, params []*driver.InboxInsertParams) ([]bool, error) {
	return unpaused(ctx, p.Executor, func() ([]bool, error) { return p.Executor.InboxInsertMany(ctx, params) })
}

// forgetfulResume is the broken variant of the operator: its resume changes the
// stored state and nothing else, so what was parked stays parked.
func forgetfulResume(exec func(t *testing.T, query string), t *testing.T) func(driver.Executor) driver.Executor {
	return func(ex driver.Executor) driver.Executor {
		return &forgetful{Executor: ex, resume: func() {
			exec(t, `UPDATE hookinbox_endpoint SET paused = false WHERE endpoint = '`+epAsync+`'`)
		}}
	}
}

type forgetful struct {
	driver.Executor
	resume func()
}

func (f *forgetful) ConsoleApply(ctx context.Context, a *driver.ConsoleAction) (int, error) {
	if a.Action == driver.ActionResume {
		f.resume()
		return 1, nil
	}
	return f.Executor.ConsoleApply(ctx, a)
}
