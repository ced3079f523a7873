package drivertest

import (
	"strings"
	"sync"
	"testing"

	"github.com/hookinbox/hookinbox/driver"
)

// Migrations (Driver.Migrate, SchemaVersion, MigrateLine, LineVersion), on a database
// that starts empty.

func migrateBehaviours[TTx any]() []behaviour[TTx] {
	return []behaviour[TTx]{
		{method: "Migrate", name: "TwiceIsANoOp", empty: true, run: testMigrateTwice[TTx]},
		{method: "Migrate", name: "ConcurrentlyFromFourProcesses", empty: true, run: testMigrateConcurrently[TTx]},
		{method: "SchemaVersion", name: "NoneThenLatest", empty: true, run: testSchemaVersion[TTx]},
		{method: "MigrateLine", name: "AnotherLineHasItsOwnVersionTable", empty: true, run: testMigrateLine[TTx]},
		{method: "LineVersion", name: "ZeroUntilTheLineMigrates", empty: true, run: testLineVersion[TTx]},
	}
}

func (b *bundle[TTx]) schemaVersion(t *testing.T, d driver.Driver[TTx]) (applied, latest int) {
	t.Helper()
	applied, latest, err := d.SchemaVersion(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	return applied, latest
}

func testMigrateTwice[TTx any](t *testing.T, b *bundle[TTx]) {
	for range 2 {
		if err := b.d.Migrate(b.ctx); err != nil {
			t.Fatal(err)
		}
	}
	if applied, latest := b.schemaVersion(t, b.d); applied != latest || latest < 1 {
		t.Fatalf("applied=%d latest=%d", applied, latest)
	}
	// The schema is usable.
	b.insert(t, &driver.InboxInsertParams{Key: key("evt_1")})
}

// Four processes migrating one new database at once: the line's lock lets one apply
// and the others find nothing to do.
func testMigrateConcurrently[TTx any](t *testing.T, b *bundle[TTx]) {
	var start, wg sync.WaitGroup
	start.Add(1)
	errs := make(chan error, 4)
	for range 4 {
		d := b.h.Other(t)
		wg.Go(func() {
			start.Wait()
			errs <- d.Migrate(b.ctx)
		})
	}
	start.Done()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if applied, latest := b.schemaVersion(t, b.d); applied != latest {
		t.Fatalf("applied=%d latest=%d", applied, latest)
	}
}

func testSchemaVersion[TTx any](t *testing.T, b *bundle[TTx]) {
	if applied, latest := b.schemaVersion(t, b.d); applied != 0 || latest < 1 {
		t.Fatalf("empty database: applied=%d latest=%d, want 0 and the newest migration", applied, latest)
	}
	if err := b.d.Migrate(b.ctx); err != nil {
		t.Fatal(err)
	}
	if applied, latest := b.schemaVersion(t, b.h.Other(t)); applied != latest {
		t.Fatalf("migrated, as another process reads it: applied=%d latest=%d", applied, latest)
	}
}

// testLine is a line beside hookinbox's: a table of its own, in SQL that both
// drivers' databases run.
func testLine(table string, migrations ...driver.Migration) driver.MigrationLine {
	return driver.MigrationLine{Name: "app", Table: table, Migrations: migrations}
}

var (
	appFirst  = driver.Migration{Version: 1, Name: "first", SQL: "CREATE TABLE app_t (id INTEGER PRIMARY KEY);"}
	appSecond = driver.Migration{Version: 2, Name: "second", SQL: "ALTER TABLE app_t ADD COLUMN note TEXT;"}
	appBroken = driver.Migration{Version: 3, Name: "broken", SQL: "CREATE TABLE app_t (id INTEGER);"}
)

// Another package's line migrates with its own version table, apart from hookinbox's,
// whatever the table's name; a failed migration of it changes nothing, the migrations
// before it in the same run included.
func testMigrateLine[TTx any](t *testing.T, b *bundle[TTx]) {
	if err := b.d.Migrate(b.ctx); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"app_migration", `odd-"name"`} {
		if table != "app_migration" {
			if err := b.d.MigrateLine(b.ctx, testLine(table, driver.Migration{Version: 1, Name: "first", SQL: "CREATE TABLE app_u (id INTEGER PRIMARY KEY);"})); err != nil {
				t.Fatalf("%s: %v", table, err)
			}
			continue
		}
		for range 2 {
			if err := b.d.MigrateLine(b.ctx, testLine(table, appFirst)); err != nil {
				t.Fatalf("%s: %v", table, err)
			}
		}
		err := b.d.MigrateLine(b.ctx, testLine(table, appFirst, appSecond, appBroken))
		if err == nil || !strings.Contains(err.Error(), "app migration 003_broken") {
			t.Fatalf("broken migration: %v, want it named", err)
		}
		if applied, latest, err := b.d.LineVersion(b.ctx, testLine(table, appFirst, appSecond, appBroken)); err != nil || applied != 1 || latest != 3 {
			t.Fatalf("after a failed migration: applied=%d latest=%d err=%v, want 1 of 3", applied, latest, err)
		}
		// Migration 2's column was rolled back with the failure: it can be added now.
		if err := b.d.MigrateLine(b.ctx, testLine(table, appFirst, appSecond)); err != nil {
			t.Fatal(err)
		}
		if applied, latest, err := b.d.LineVersion(b.ctx, testLine(table, appFirst, appSecond)); err != nil || applied != 2 || latest != 2 {
			t.Fatalf("applied=%d latest=%d err=%v", applied, latest, err)
		}
	}
	if applied, latest := b.schemaVersion(t, b.d); applied != latest {
		t.Fatalf("hookinbox's line: applied=%d latest=%d", applied, latest)
	}
	if err := b.d.MigrateLine(b.ctx, testLine("", appFirst)); err == nil {
		t.Fatal("a line without a version table migrated")
	}
}

func testLineVersion[TTx any](t *testing.T, b *bundle[TTx]) {
	line := testLine("app_migration", appFirst, appSecond)
	if applied, latest, err := b.d.LineVersion(b.ctx, line); err != nil || applied != 0 || latest != 2 {
		t.Fatalf("before its version table exists: applied=%d latest=%d err=%v, want 0 of 2", applied, latest, err)
	}
	if applied, latest, err := b.d.LineVersion(b.ctx, testLine("app_migration")); err != nil || applied != 0 || latest != 0 {
		t.Fatalf("a line with no migrations: applied=%d latest=%d err=%v", applied, latest, err)
	}
	if err := b.d.MigrateLine(b.ctx, testLine("app_migration", appFirst)); err != nil {
		t.Fatal(err)
	}
	if applied, latest, err := b.d.LineVersion(b.ctx, line); err != nil || applied != 1 || latest != 2 {
		t.Fatalf("after migration 1: applied=%d latest=%d err=%v, want 1 of 2", applied, latest, err)
	}
	if applied, _ := b.schemaVersion(t, b.d); applied != 0 {
		t.Fatalf("hookinbox's line: applied=%d, want 0 (another line migrated)", applied)
	}
}
