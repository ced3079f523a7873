package driver

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Migration is one versioned schema change of a driver.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// ReadMigrations reads the migrations in dir of fsys (a driver's embedded files), in
// version order. A file is named NNN_name.sql; versions are forward-only, never
// renumbered, and mean the same tables and columns in every driver.
func ReadMigrations(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("error reading embedded migrations: %w", err)
	}
	var all []Migration
	for _, e := range entries {
		num, name, ok := strings.Cut(strings.TrimSuffix(e.Name(), ".sql"), "_")
		version, err := strconv.Atoi(num)
		if !ok || err != nil || !strings.HasSuffix(e.Name(), ".sql") {
			return nil, fmt.Errorf("migration file %q is not named NNN_name.sql", e.Name())
		}
		body, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("error reading migration %s: %w", e.Name(), err)
		}
		all = append(all, Migration{Version: version, Name: name, SQL: string(body)})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Version < all[j].Version })
	for i := 1; i < len(all); i++ {
		if all[i].Version == all[i-1].Version {
			return nil, fmt.Errorf("two migrations have version %d", all[i].Version)
		}
	}
	return all, nil
}

// MigrationLine is a versioned sequence of migrations with a version table of its own,
// so that packages beside the core (the billing domain, say) migrate their own tables
// independently of hookinbox's and of each other.
type MigrationLine struct {
	// Name says whose migrations these are in messages, e.g. "hookinbox".
	Name string
	// Table is the version table: one row per applied migration.
	Table string
	// Migrations are in version order, as ReadMigrations returns them.
	Migrations []Migration
}

// Latest returns the newest version of the line, 0 when it has none.
func (l MigrationLine) Latest() int {
	if len(l.Migrations) == 0 {
		return 0
	}
	return l.Migrations[len(l.Migrations)-1].Version
}
