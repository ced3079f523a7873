// Package drivertest is the behaviour suite of the driver contract: every method of
// driver.Driver, driver.Executor (its console and backfill methods included),
// driver.ExecutorTx and, where a driver implements it, driver.Notifier, exercised
// against a real database as package driver documents it. Each driver's tests run it,
// as River's drivers run riverdrivertest.Exercise:
//
//	func TestDriver(t *testing.T) {
//		t.Parallel()
//		drivertest.Exercise(t, func(t *testing.T) *drivertest.Harness[pgx.Tx] { ... })
//	}
//
// Each behaviour is a subtest named after the method it is about, then what it shows
// ("InboxClaim/OldestAvailableOfItsEndpointsCountsTheAttempt"); a unit test of this
// package fails when a method of the contract has none.
package drivertest

import (
	"context"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/driver"
)

// Harness is one test's database, opened by a driver's test for Exercise.
type Harness[TTx any] struct {
	// Driver works on a new, empty database of the test's own, which Exercise
	// migrates (or, for the migration's own behaviours, leaves empty).
	Driver driver.Driver[TTx]

	// Other opens another driver on the same database with connections of its own,
	// as another process has them.
	Other func(t *testing.T) driver.Driver[TTx]

	// Unreachable opens a driver whose database cannot be reached (a server nobody
	// listens for, a closed database): its statements fail.
	Unreachable func(t *testing.T) driver.Driver[TTx]

	// Elapse makes d pass for what the database stores: every time in every
	// hookinbox_* table moves back by d, while the clock stands still. The contract
	// has no method for it; the suite needs rows that are old and leases that ran
	// out without waiting for them.
	Elapse func(ctx context.Context, d time.Duration) error
}

// Exercise runs every behaviour of the contract, each as a parallel subtest on a
// database of its own that open returns.
func Exercise[TTx any](t *testing.T, open func(t *testing.T) *Harness[TTx]) {
	t.Helper()
	for _, tc := range behaviours[TTx]() {
		t.Run(tc.method+"/"+tc.name, func(t *testing.T) {
			t.Parallel()
			h := open(t)
			b := &bundle[TTx]{ctx: context.Background(), h: h, d: h.Driver, ex: h.Driver.Executor()}
			if !tc.empty {
				if err := b.d.Migrate(b.ctx); err != nil {
					t.Fatal(err)
				}
			}
			tc.run(t, b)
		})
	}
}

// behaviour is one behaviour of the contract.
type behaviour[TTx any] struct {
	// method is the method of the contract the behaviour is about.
	method string
	name   string
	// empty leaves the database unmigrated.
	empty bool
	run   func(t *testing.T, b *bundle[TTx])
}

// behaviours lists the suite.
func behaviours[TTx any]() []behaviour[TTx] {
	var all []behaviour[TTx]
	for _, part := range [][]behaviour[TTx]{
		driverBehaviours[TTx](),
		migrateBehaviours[TTx](),
		txBehaviours[TTx](),
		inboxBehaviours[TTx](),
		retentionBehaviours[TTx](),
		outboxBehaviours[TTx](),
		effectBehaviours[TTx](),
		consoleBehaviours[TTx](),
		consoleOpsBehaviours[TTx](),
		backfillBehaviours[TTx](),
		notifierBehaviours[TTx](),
	} {
		all = append(all, part...)
	}
	return all
}

// bundle is one behaviour's world: a driver on its database, and its executor.
type bundle[TTx any] struct {
	ctx context.Context
	h   *Harness[TTx]
	d   driver.Driver[TTx]
	ex  driver.Executor
}

// elapse makes d pass for every row stored so far.
func (b *bundle[TTx]) elapse(t *testing.T, d time.Duration) {
	t.Helper()
	if err := b.h.Elapse(b.ctx, d); err != nil {
		t.Fatalf("elapse %s: %v", d, err)
	}
}

// begin begins a transaction, rolled back at the end of the test if still open.
func (b *bundle[TTx]) begin(t *testing.T, d driver.Driver[TTx]) driver.ExecutorTx[TTx] {
	t.Helper()
	tx, err := d.Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx
}
