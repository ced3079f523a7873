package effect_test

import (
	"os"
	"testing"

	"github.com/hookinbox/hookinbox/internal/testdb"
)

// TestMain gives the runnable examples a database: DATABASE_URL, as a service would
// read it, set to a fresh schema of the test server. Tests build their own schemas.
func TestMain(m *testing.M) { os.Exit(testdb.RunWithDatabaseURL(m)) }
