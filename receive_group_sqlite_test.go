package hookinbox_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/driver/sqlitedriver"
	"github.com/hookinbox/hookinbox/internal/testwait"
	"github.com/hookinbox/hookinbox/provider"
)

// SQLite: a handler statement that rolls back the whole transaction (OR ROLLBACK, a
// trigger's RAISE(ROLLBACK), SQLITE_FULL...) and whose error the handler swallows ends
// the group's transaction. Before the savepoints were released after each delivery,
// the next delivery's SAVEPOINT silently opened a new transaction, which Commit
// committed: the earlier delivery was answered processed and was gone (found by
// review). Now the release fails, the group falls back to one transaction each, and
// the swallowing delivery fails at its own commit.
func TestReceiveGroup_SQLiteHandlerThatEndsTheTransactionIsNotAnswered2xx(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sqlitedriver.Open(filepath.Join(t.TempDir(), "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	d := sqlitedriver.New(db)
	v, _ := provider.NewStripe(provider.StripeConfig{Secrets: []string{testSecret}})
	inbox, err := hookinbox.New(d, &hookinbox.Config{Endpoints: []hookinbox.EndpointConfig{{Name: epBilling, Verifier: v}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := inbox.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE uniq (k TEXT PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO uniq VALUES ('taken')`); err != nil {
		t.Fatal(err)
	}
	hold, held := make(chan struct{}), make(chan struct{})
	inbox.Handle(epBilling, "invoice.paid", func(ctx context.Context, tx *sql.Tx, ev hookinbox.Event) error {
		if ev.ID == "evt_hold" {
			close(held)
			<-hold
		}
		if ev.ID == "evt_swallow" {
			_, _ = tx.ExecContext(ctx, `INSERT OR ROLLBACK INTO uniq VALUES ('taken')`) // "already there": ignored
		}
		return nil
	})
	type res struct {
		out hookinbox.Outcome
		err error
	}
	recv := func(id string) chan res {
		c := make(chan res, 1)
		go func() { o, e := inbox.Receive(ctx, paid(epBilling, id)); c <- res{o, e} }()
		return c
	}
	h := recv("evt_hold")
	<-held
	r1 := recv("evt_swallow")
	testwait.Until(t, 30*time.Second, "queued", func() bool { return inbox.SyncQueuedForTest() == 1 })
	r2 := recv("evt_next")
	testwait.Until(t, 30*time.Second, "queued", func() bool { return inbox.SyncQueuedForTest() == 2 })
	close(hold)
	<-h
	a, b := <-r1, <-r2
	var n int
	_ = db.QueryRow(`SELECT count(*) FROM hookinbox_inbox WHERE event_id = 'evt_swallow'`).Scan(&n)
	if a.err == nil && n == 0 {
		t.Fatalf("evt_swallow answered %q with no receipt committed", a.out)
	}
	if b.err != nil || b.out != hookinbox.OutcomeProcessed {
		t.Fatalf("the delivery after it: %q, %v; want processed", b.out, b.err)
	}
}
