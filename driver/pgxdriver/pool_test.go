package pgxdriver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookinbox/hookinbox/internal/testdb"
)

// ConfigurePool, against its promise: each new connection runs the config's own
// AfterConnect, then the statement that readies its server process; an error of the
// own hook refuses the connection. What the statement does to the server's malloc is
// measured (docs/BENCHMARKS.md), not asserted.

const ownHookSQL = "SELECT 'the application''s own hook'"

// checkNewConnection opens a pool whose config has an own AfterConnect (failing with
// ownErr when set), configured by configure, and reports how a new connection's
// statements break ConfigurePool's promise.
func checkNewConnection(t *testing.T, configure func(*pgxpool.Config), ownErr error) error {
	t.Helper()
	db := testdb.New(t, testdb.Options{MaxConns: 1})
	cfg := db.Config(t)
	log := &testdb.Statements{}
	cfg.ConnConfig.Tracer = log
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		if _, err := conn.Exec(ctx, ownHookSQL); err != nil {
			return err
		}
		return ownErr
	}
	configure(cfg)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var one int
	err = pool.QueryRow(context.Background(), "SELECT 1").Scan(&one)
	got := log.SQL()
	switch {
	case ownErr != nil && !errors.Is(err, ownErr):
		return fmt.Errorf("the own hook failed with %v, and the connection gave %v", ownErr, err)
	case ownErr != nil && slices.Contains(got, sqlReadyBackend):
		return fmt.Errorf("the own hook failed, and the readying statement still ran: %q", got)
	case ownErr != nil:
		return nil
	case err != nil:
		return fmt.Errorf("a query on a new connection: %v", err)
	case len(got) < 2 || got[0] != ownHookSQL || got[1] != sqlReadyBackend:
		return fmt.Errorf("a new connection sent %q; want the own hook's statement, then the readying one", got)
	}
	return nil
}

func TestConfigurePool_OwnHookFirstThenTheBackendIsReadied(t *testing.T) {
	if err := checkNewConnection(t, ConfigurePool, nil); err != nil {
		t.Fatal(err)
	}
}

func TestConfigurePool_AFailingOwnHookRefusesTheConnection(t *testing.T) {
	if err := checkNewConnection(t, ConfigurePool, errors.New("own hook refused")); err != nil {
		t.Fatal(err)
	}
}

// configurePoolReplacing is the broken variant: it sets AfterConnect without keeping
// the one the config had.
func configurePoolReplacing(cfg *pgxpool.Config) {
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, sqlReadyBackend)
		return err
	}
}

func TestConfigurePool_TheCheckCatchesAReplacedHook(t *testing.T) {
	if err := checkNewConnection(t, configurePoolReplacing, nil); err == nil {
		t.Fatal("a ConfigurePool that drops the config's own AfterConnect passed the check")
	} else {
		t.Logf("caught: %v", err)
	}
	if err := checkNewConnection(t, configurePoolReplacing, errors.New("own hook refused")); err == nil {
		t.Fatal("a ConfigurePool that drops the config's own AfterConnect passed the failing-hook check")
	}
}
