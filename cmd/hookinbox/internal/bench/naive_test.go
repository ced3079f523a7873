package bench

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/hookinboxtest"
	"github.com/hookinbox/hookinbox/internal/testdb"
)

// The naive receiver runs the pgbench scripts' statements, with the event's values
// as parameters and nothing of pgbench's variables left.
func TestNaiveSQL_IsThePgbenchScripts(t *testing.T) {
	t.Parallel()
	if naiveAccept.tx || len(naiveAccept.queries) != 1 {
		t.Errorf("accept: tx %v, %d statements; want one statement committed on its own", naiveAccept.tx, len(naiveAccept.queries))
	}
	if !naiveSync.tx || len(naiveSync.queries) != 4 {
		t.Errorf("sync: tx %v, %d statements; want a transaction of four", naiveSync.tx, len(naiveSync.queries))
	}
	want := [][]string{
		{"event_id", "event_type", "payload"},            // receipt
		{"invoice_id", "customer", "amount", "currency"}, // invoice upsert
		{"event_id", "invoice_id", "amount", "currency"}, // ledger entry
		{"event_id", "invoice_id", "message"},            // outbox message
	}
	for k, q := range naiveSync.queries {
		if !slices.Equal(q.params, want[k]) {
			t.Errorf("sync statement %d binds %v, want %v:\n%s", k+1, q.params, want[k], q.sql)
		}
		if strings.Contains(q.sql, "pgb_") || strings.Contains(q.sql, "BEGIN") || strings.Contains(q.sql, "COMMIT") {
			t.Errorf("sync statement %d kept pgbench's ids or its transaction:\n%s", k+1, q.sql)
		}
	}
	if !slices.Equal(naiveAccept.queries[0].params, want[0]) || naiveAccept.queries[0].sql == naiveSync.queries[0].sql {
		t.Errorf("accept's receipt binds %v (want %v) and must differ from sync's (pending, not processed):\n%s",
			naiveAccept.queries[0].params, want[0], naiveAccept.queries[0].sql)
	}

	// A variable the receiver does not bind is refused, not sent to PostgreSQL.
	if _, err := parseNaiveScript("\\set seq :seq + 1\nINSERT INTO t VALUES (:unknown);\n"); err == nil {
		t.Error("a script with an unbound variable was parsed")
	}
}

// The naive receiver applies each event once in its transaction, answers a duplicate
// without writing, and refuses a bad signature with 400, writing nothing.
func TestNaive_AppliesEachEventOnce(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{ModeSync, ModeAccept} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			admin, err := connectAdmin(ctx, testdb.DirectURL())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(admin.Close)
			cfg, _, err := generatedConfig(serverSpec{mode: mode, provider: "stripe", workers: 1, dispatchers: 1})
			if err != nil {
				t.Fatal(err)
			}
			schema, db, drop, err := anchorSchema(ctx, admin, testdb.DirectURL(), "hookinbox_naive_test_", cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(drop)
			url, stop, err := startNaive(ctx, db, mode, "whsec_naive_test", 2)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(stop)
			gen, err := newEventGen(stripeTemplate, "stripe", nil)
			if err != nil {
				t.Fatal(err)
			}
			post := func(signer hookinboxtest.Signer, seq int64) int {
				t.Helper()
				p, err := newPoster(url, signer, 10*time.Second, func() *http.Client { return http.DefaultClient })
				if err != nil {
					t.Fatal(err)
				}
				defer p.close()
				status, _, err := p.post(gen.event(seq))
				if err != nil {
					t.Fatal(err)
				}
				return status
			}
			good, bad := hookinboxtest.Stripe("whsec_naive_test"), hookinboxtest.Stripe("whsec_other")
			for _, seq := range []int64{1, 2, 1} {
				if status := post(good, seq); status != 200 {
					t.Errorf("event %d answered %d, want 200", seq, status)
				}
			}
			if status := post(bad, 3); status != 400 {
				t.Errorf("a bad signature answered %d, want 400", status)
			}

			got, err := countPostgres(ctx, admin, schema)
			if err != nil {
				t.Fatal(err)
			}
			// accept's schema has billing's tables too: its endpoint is async billing.
			want := "2 receipts (2 pending), 0 ledger entries, 0 outbox messages (0 pending)"
			if mode == ModeSync {
				want = "2 receipts (0 pending), 2 ledger entries, 2 outbox messages (2 pending)"
			}
			if got.String() != want {
				t.Errorf("the receiver left %s, want %s", got, want)
			}
		})
	}
}
