package sqlitedriver_test

import (
	"testing"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/internal/consoletest"
)

// TestConsole_Exercise holds the console's pause, redelivery, bulk outbox, roll-up and
// paging methods to their documentation (internal/consoletest), on SQLite.
func TestConsole_Exercise(t *testing.T) {
	t.Parallel()
	consoletest.Run(t, func(t *testing.T) (driver.Executor, func(*testing.T, string, int)) {
		b := setup(t)
		return b.ex, func(t *testing.T, endpoint string, n int) {
			b.exec(t, `
WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < ?2)
INSERT INTO hookinbox_inbox (provider, endpoint, event_id, event_type, payload, max_attempts)
SELECT 'stripe', ?1, 'fill_' || i, 't', '{}', 3 FROM g`, endpoint, n)
		}
	})
}
