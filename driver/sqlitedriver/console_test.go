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
	consoletest.Run(t, func(t *testing.T) driver.Executor { return setup(t).ex })
}
