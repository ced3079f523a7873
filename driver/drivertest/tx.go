package drivertest

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// The Driver's own methods and the transaction (driver.ExecutorTx), against their
// documentation in driver/driver.go.

func driverBehaviours[TTx any]() []behaviour[TTx] {
	return []behaviour[TTx]{
		{method: "Name", name: "AShortLowerCaseName", run: testName[TTx]},
		{method: "Executor", name: "EachStatementCommitsOnItsOwn", run: testExecutor[TTx]},
		{method: "UnwrapExecutor", name: "StatementsBelongToTheCallersTransaction", run: testUnwrapExecutor[TTx]},
		{method: "UnwrapExecutor", name: "NeedsNoDriverState", run: testUnwrapExecutorZeroDriver[TTx]},
		{method: "TranslateError", name: "KeepsWhatItDoesNotKnow", run: testTranslateError[TTx]},
		{method: "TranslateError", name: "UnreachableDatabaseIsUnavailable", run: testTranslateErrorUnreachable[TTx]},
	}
}

func txBehaviours[TTx any]() []behaviour[TTx] {
	return []behaviour[TTx]{
		{method: "Begin", name: "WritesUnseenUntilCommit", run: testBegin[TTx]},
		{method: "Commit", name: "KeepsEveryStatement", run: testCommit[TTx]},
		{method: "Rollback", name: "UndoesEveryStatementAndIsHarmlessAfterCommit", run: testRollback[TTx]},
		{method: "Native", name: "IsTheTransaction", run: testNative[TTx]},
		{method: "Savepoint", name: "RollbackToItUndoesOnlyWhatCameAfter", run: testSavepoint[TTx]},
		{method: "RollbackToSavepoint", name: "LeavesAFailedTransactionUsable", run: testRollbackToSavepoint[TTx]},
		{method: "ReleaseSavepoint", name: "KeepsWhatCameAfter", run: testReleaseSavepoint[TTx]},
		{method: "SavepointInboxInsert", name: "InsertUndoneAloneByRollbackToSavepoint", run: testSavepointInboxInsert[TTx]},
		{method: "SavepointInboxInsertMany", name: "InsertsUndoneAloneByRollbackToSavepoint", run: testSavepointInboxInsertMany[TTx]},
		{method: "SetStatementTimeout", name: "TheTransactionGoesOn", run: testSetStatementTimeout[TTx]},
	}
}

func testName[TTx any](t *testing.T, b *bundle[TTx]) {
	name := b.d.Name()
	if name == "" || name != strings.ToLower(name) || strings.ContainsAny(name, " /") || b.h.Other(t).Name() != name {
		t.Fatalf("name %q", name)
	}
}

// Each statement of the driver's executor is a transaction of its own: another
// process sees it at once.
func testExecutor[TTx any](t *testing.T, b *bundle[TTx]) {
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_1")})
	if r, err := b.h.Other(t).Executor().InboxGet(b.ctx, key("evt_1")); err != nil || r == nil {
		t.Fatalf("another process reads %+v %v, want the receipt", r, err)
	}
}

func testUnwrapExecutor[TTx any](t *testing.T, b *bundle[TTx]) {
	for _, commit := range []bool{false, true} {
		tx := b.begin(t, b.d)
		k := key(fmt.Sprint("evt_commit_", commit))
		if ok, err := b.d.UnwrapExecutor(tx.Native()).InboxInsert(b.ctx, params(&driver.InboxInsertParams{Key: k})); err != nil || !ok {
			t.Fatalf("insert through the unwrapped executor: %v %v", ok, err)
		}
		if _, err := b.d.UnwrapExecutor(tx.Native()).OutboxInsert(b.ctx, &driver.OutboxInsertParams{AggregateType: "a", AggregateID: "1", EventType: "e", Payload: []byte(`{}`), Source: k}); err != nil {
			t.Fatal(err)
		}
		var err error
		if commit {
			err = tx.Commit(b.ctx)
		} else {
			err = tx.Rollback(b.ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		if r := b.get(t, k); (r != nil) != commit {
			t.Fatalf("commit=%v: receipt %+v", commit, r)
		}
	}
	if msgs := b.outbox(t, driver.OutboxListParams{}); len(msgs) != 1 || msgs[0].Source != key("evt_commit_true") {
		t.Fatalf("outbox %+v, want only the committed transaction's message", msgs)
	}
}

// hookinbox.InsertOutboxTx calls UnwrapExecutor on the zero value of the driver's type.
func testUnwrapExecutorZeroDriver[TTx any](t *testing.T, b *bundle[TTx]) {
	zero, ok := reflect.Zero(reflect.TypeOf(b.d)).Interface().(driver.Driver[TTx])
	if !ok {
		t.Fatalf("the zero value of %T is not a driver", b.d)
	}
	tx := b.begin(t, b.d)
	if _, err := zero.UnwrapExecutor(tx.Native()).OutboxInsert(b.ctx, &driver.OutboxInsertParams{AggregateType: "a", AggregateID: "1", EventType: "e", Payload: []byte(`{}`), Source: key("evt_1")}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(b.ctx); err != nil {
		t.Fatal(err)
	}
	if msgs := b.outbox(t, driver.OutboxListParams{}); len(msgs) != 1 {
		t.Fatalf("outbox %+v, want the message", msgs)
	}
}

func testTranslateError[TTx any](t *testing.T, b *bundle[TTx]) {
	if err := b.d.TranslateError(nil); err != nil {
		t.Fatalf("nil: %v", err)
	}
	plain := errors.New("handler: invoice in_1 is locked by the ledger")
	if err := b.d.TranslateError(plain); err != plain {
		t.Fatalf("a handler's own error: %v, want it unchanged", err)
	}
	for _, sentinel := range []error{driver.ErrStatementTimeout, driver.ErrUnavailable, driver.ErrInvalidInput} {
		err := fmt.Errorf("handler: %w", sentinel)
		if got := b.d.TranslateError(err); !errors.Is(got, sentinel) || !errors.Is(got, err) {
			t.Errorf("%v: %v, want it kept", err, got)
		}
	}
	// The driver's own errors, translated already, stay what they are.
	_, err := b.ex.InboxInsert(b.ctx, &driver.InboxInsertParams{Key: key("evt_1"), EventType: "t", Payload: []byte(`{`)})
	if got := b.d.TranslateError(err); !errors.Is(got, driver.ErrInvalidInput) {
		t.Fatalf("an invalid payload's error: %v, want ErrInvalidInput", got)
	}
}

// A database that cannot be reached fails each statement as unavailable, whether it
// runs on its own or in a transaction.
func testTranslateErrorUnreachable[TTx any](t *testing.T, b *bundle[TTx]) {
	d := b.h.Unreachable(t)
	if _, err := d.Executor().InboxGet(b.ctx, key("evt_1")); !errors.Is(err, driver.ErrUnavailable) {
		t.Errorf("a statement: %v, want ErrUnavailable", err)
	}
	tx, err := d.Begin(b.ctx)
	if err == nil {
		defer tx.Rollback(b.ctx) //nolint:errcheck
		_, err = tx.InboxInsert(b.ctx, params(&driver.InboxInsertParams{Key: key("evt_1")}))
	}
	if !errors.Is(err, driver.ErrUnavailable) {
		t.Errorf("a transaction: %v, want ErrUnavailable", err)
	}
	if !errors.Is(d.TranslateError(err), driver.ErrUnavailable) {
		t.Errorf("translated again: %v", d.TranslateError(err))
	}
}

// A transaction's writes are its own until it commits: another process does not see
// them, and then sees them all.
func testBegin[TTx any](t *testing.T, b *bundle[TTx]) {
	tx := b.begin(t, b.d)
	if ok, err := tx.InboxInsert(b.ctx, params(&driver.InboxInsertParams{Key: key("evt_1")})); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if r, err := tx.InboxGet(b.ctx, key("evt_1")); err != nil || r == nil {
		t.Fatalf("the transaction reads its own insert: %+v %v", r, err)
	}
	other := b.h.Other(t).Executor()
	if r, err := other.InboxGet(b.ctx, key("evt_1")); err != nil || r != nil {
		t.Fatalf("another process reads %+v %v before the commit, want nothing", r, err)
	}
	if err := tx.Commit(b.ctx); err != nil {
		t.Fatal(err)
	}
	if r, err := other.InboxGet(b.ctx, key("evt_1")); err != nil || r == nil {
		t.Fatalf("another process reads %+v %v after the commit, want the receipt", r, err)
	}
}

func testCommit[TTx any](t *testing.T, b *bundle[TTx]) {
	if err := b.begin(t, b.d).Commit(b.ctx); err != nil {
		t.Fatalf("commit of a transaction that did nothing: %v", err)
	}
	tx := b.begin(t, b.d)
	if ok, err := tx.InboxInsert(b.ctx, params(&driver.InboxInsertParams{Key: key("evt_1")})); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if err := tx.InboxMarkProcessed(b.ctx, []hookinboxtype.Key{key("evt_1")}, "processed", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.OutboxInsert(b.ctx, &driver.OutboxInsertParams{AggregateType: "a", AggregateID: "1", EventType: "e", Payload: []byte(`{}`), Source: key("evt_1")}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(b.ctx); err != nil {
		t.Fatal(err)
	}
	if r := b.get(t, key("evt_1")); r == nil || r.State != hookinboxtype.StateProcessed {
		t.Fatalf("after commit: %+v, want processed", r)
	}
	if msgs := b.outbox(t, driver.OutboxListParams{}); len(msgs) != 1 {
		t.Fatalf("outbox %+v, want the message", msgs)
	}
}

func testRollback[TTx any](t *testing.T, b *bundle[TTx]) {
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_pending")})
	tx := b.begin(t, b.d)
	if ok, err := tx.InboxInsert(b.ctx, params(&driver.InboxInsertParams{Key: key("evt_1")})); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if err := tx.InboxMarkProcessed(b.ctx, []hookinboxtype.Key{key("evt_pending")}, "processed", nil); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(b.ctx); err != nil {
		t.Fatal(err)
	}
	if r := b.get(t, key("evt_1")); r != nil {
		t.Fatalf("rolled back, yet %+v stayed", r)
	}
	if r := b.get(t, key("evt_pending")); r.State != hookinboxtype.StatePending {
		t.Fatalf("rolled back, yet %+v changed", r)
	}
	if err := b.begin(t, b.d).Rollback(b.ctx); err != nil {
		t.Fatalf("rollback of a transaction that did nothing: %v", err)
	}
	tx = b.begin(t, b.d)
	if _, err := tx.InboxInsert(b.ctx, params(&driver.InboxInsertParams{Key: key("evt_2")})); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(b.ctx); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(b.ctx); err != nil {
		t.Fatalf("rollback after commit: %v, want nothing (callers defer it)", err)
	}
	if r := b.get(t, key("evt_2")); r == nil {
		t.Fatal("rollback after commit undid it")
	}
}

// Native is the transaction handlers receive: what the driver unwraps from it is in
// the same transaction as the transaction's own statements.
func testNative[TTx any](t *testing.T, b *bundle[TTx]) {
	tx := b.begin(t, b.d)
	if ok, err := tx.InboxInsert(b.ctx, params(&driver.InboxInsertParams{Key: key("evt_1")})); err != nil || !ok {
		t.Fatal(ok, err)
	}
	native := b.d.UnwrapExecutor(tx.Native())
	if r, err := native.InboxGet(b.ctx, key("evt_1")); err != nil || r == nil {
		t.Fatalf("the native transaction reads %+v %v, want the transaction's insert", r, err)
	}
	if err := native.InboxMarkProcessed(b.ctx, []hookinboxtype.Key{key("evt_1")}, "processed", nil); err != nil {
		t.Fatal(err)
	}
	if r, err := tx.InboxGet(b.ctx, key("evt_1")); err != nil || r.State != hookinboxtype.StateProcessed {
		t.Fatalf("the transaction reads %+v %v, want the native write", r, err)
	}
	if err := tx.Rollback(b.ctx); err != nil {
		t.Fatal(err)
	}
	if r := b.get(t, key("evt_1")); r != nil {
		t.Fatalf("rolled back, yet %+v stayed", r)
	}
}

func testSavepoint[TTx any](t *testing.T, b *bundle[TTx]) {
	tx := b.begin(t, b.d)
	if _, err := tx.InboxInsert(b.ctx, params(&driver.InboxInsertParams{Key: key("evt_before")})); err != nil {
		t.Fatal(err)
	}
	if err := tx.Savepoint(b.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.InboxInsert(b.ctx, params(&driver.InboxInsertParams{Key: key("evt_after")})); err != nil {
		t.Fatal(err)
	}
	if err := tx.RollbackToSavepoint(b.ctx); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(b.ctx); err != nil {
		t.Fatal(err)
	}
	if ids := fmt.Sprint(b.receipts(t)); ids != "[evt_before]" {
		t.Fatalf("receipts %s, want what came before the savepoint", ids)
	}
}

// A statement that failed after the savepoint is undone with what else came after it,
// and the transaction goes on.
func testRollbackToSavepoint[TTx any](t *testing.T, b *bundle[TTx]) {
	tx := b.begin(t, b.d)
	for i := range 2 { // a savepoint may be taken again after rolling back to it
		if err := tx.Savepoint(b.ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.InboxInsert(b.ctx, params(&driver.InboxInsertParams{Key: key(fmt.Sprint("evt_undone_", i))})); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.InboxInsert(b.ctx, params(&driver.InboxInsertParams{Key: key("evt_bad"), Payload: []byte(`{`)})); !errors.Is(err, driver.ErrInvalidInput) {
			t.Fatalf("invalid payload: %v", err)
		}
		if err := tx.RollbackToSavepoint(b.ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tx.InboxInsert(b.ctx, params(&driver.InboxInsertParams{Key: key("evt_kept")})); err != nil {
		t.Fatalf("a statement after rolling back to the savepoint: %v", err)
	}
	if err := tx.Commit(b.ctx); err != nil {
		t.Fatal(err)
	}
	if ids := fmt.Sprint(b.receipts(t)); ids != "[evt_kept]" {
		t.Fatalf("receipts %s, want evt_kept only", ids)
	}
}

func testReleaseSavepoint[TTx any](t *testing.T, b *bundle[TTx]) {
	tx := b.begin(t, b.d)
	for _, id := range []string{"evt_1", "evt_2"} {
		if err := tx.Savepoint(b.ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.InboxInsert(b.ctx, params(&driver.InboxInsertParams{Key: key(id)})); err != nil {
			t.Fatal(err)
		}
		if err := tx.ReleaseSavepoint(b.ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(b.ctx); err != nil {
		t.Fatal(err)
	}
	if ids := b.receipts(t); len(ids) != 2 {
		t.Fatalf("receipts %v, want both", ids)
	}
}

func testSavepointInboxInsert[TTx any](t *testing.T, b *bundle[TTx]) {
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_dup")})
	tx := b.begin(t, b.d)
	for id, want := range map[string]bool{"evt_1": true, "evt_dup": false} {
		if ok, err := tx.SavepointInboxInsert(b.ctx, params(&driver.InboxInsertParams{Key: key(id)})); err != nil || ok != want {
			t.Fatalf("%s: inserted %v %v, want %v", id, ok, err, want)
		}
		if err := tx.ReleaseSavepoint(b.ctx); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := tx.SavepointInboxInsert(b.ctx, params(&driver.InboxInsertParams{Key: key("evt_undone")})); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if err := tx.RollbackToSavepoint(b.ctx); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(b.ctx); err != nil {
		t.Fatal(err)
	}
	if ids := fmt.Sprint(b.receipts(t)); ids != "[evt_1 evt_dup]" && ids != "[evt_dup evt_1]" {
		t.Fatalf("receipts %s, want evt_1 and evt_dup", ids)
	}
}

func testSavepointInboxInsertMany[TTx any](t *testing.T, b *bundle[TTx]) {
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_dup")})
	tx := b.begin(t, b.d)
	kept := []*driver.InboxInsertParams{params(&driver.InboxInsertParams{Key: key("evt_1")}), params(&driver.InboxInsertParams{Key: key("evt_dup")})}
	if inserted, err := tx.SavepointInboxInsertMany(b.ctx, kept); err != nil || fmt.Sprint(inserted) != "[true false]" {
		t.Fatalf("inserted %v %v, want [true false]", inserted, err)
	}
	if err := tx.ReleaseSavepoint(b.ctx); err != nil {
		t.Fatal(err)
	}
	undone := []*driver.InboxInsertParams{params(&driver.InboxInsertParams{Key: key("evt_2")}), params(&driver.InboxInsertParams{Key: key("evt_3")})}
	if inserted, err := tx.SavepointInboxInsertMany(b.ctx, undone); err != nil || fmt.Sprint(inserted) != "[true true]" {
		t.Fatalf("inserted %v %v", inserted, err)
	}
	if err := tx.RollbackToSavepoint(b.ctx); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(b.ctx); err != nil {
		t.Fatal(err)
	}
	if ids := b.receipts(t); len(ids) != 2 || b.get(t, key("evt_1")) == nil {
		t.Fatalf("receipts %v, want evt_1 and evt_dup", ids)
	}
}

// A statement timeout bounds the transaction's later statements; those that finish
// in time run and commit as usual.
func testSetStatementTimeout[TTx any](t *testing.T, b *bundle[TTx]) {
	tx := b.begin(t, b.d)
	if err := tx.SetStatementTimeout(b.ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if ok, err := tx.InboxInsert(b.ctx, params(&driver.InboxInsertParams{Key: key("evt_1")})); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if err := tx.SetStatementTimeout(b.ctx, 5*time.Second); err != nil {
		t.Fatalf("a second timeout, after a statement: %v", err)
	}
	if err := tx.InboxMarkProcessed(b.ctx, []hookinboxtype.Key{key("evt_1")}, "processed", nil); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(b.ctx); err != nil {
		t.Fatal(err)
	}
	if r := b.get(t, key("evt_1")); r == nil || r.State != hookinboxtype.StateProcessed {
		t.Fatalf("after commit: %+v", r)
	}
}
