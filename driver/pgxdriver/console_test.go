package pgxdriver

import (
	"context"
	"testing"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/internal/consoletest"
)

// TestConsole_Exercise holds the console's pause, redelivery, bulk outbox, roll-up and
// paging methods to their documentation (internal/consoletest), on PostgreSQL.
func TestConsole_Exercise(t *testing.T) {
	t.Parallel()
	consoletest.Run(t, func(t *testing.T) (driver.Executor, func(*testing.T, string, int)) {
		db, d := migrated(t)
		return d.Executor(), func(t *testing.T, endpoint string, n int) {
			if _, err := db.Pool.Exec(context.Background(), `
INSERT INTO hookinbox_inbox (provider, endpoint, event_id, event_type, payload, max_attempts)
SELECT 'stripe', $1, 'fill_' || g, 't', '{}', 3 FROM generate_series(1, $2) AS g`, endpoint, n); err != nil {
				t.Fatal(err)
			}
		}
	})
}
