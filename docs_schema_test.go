package hookinbox_test

import (
	"path"
	"regexp"
	"strings"
	"testing"
)

var createdTable = regexp.MustCompile(`(?i)\bCREATE TABLE (?:IF NOT EXISTS )?([a-z_][a-z0-9_]*)`)

// The schema is documented in one place, docs/CONTRACT.md: this test fails when a
// migration (hookinbox's, on either driver, or an example domain's) creates a table
// that CONTRACT does not name, or when a migration version is missing from its table
// of schema versions.
func TestContract_NamesEveryTableAndSchemaVersion(t *testing.T) {
	t.Parallel()
	doc := readDoc(t, "docs/CONTRACT.md")
	tables := map[string]string{} // table → the first migration that creates it
	versions := map[string]bool{}
	for _, file := range repositoryFiles(t, ".sql") {
		if !strings.Contains(file, "/migrations/") {
			continue
		}
		for _, m := range createdTable.FindAllStringSubmatch(readDoc(t, file), -1) {
			if _, seen := tables[m[1]]; !seen {
				tables[m[1]] = file
			}
		}
		if strings.HasPrefix(file, "driver/") {
			versions[strings.TrimLeft(strings.SplitN(path.Base(file), "_", 2)[0], "0")] = true
		}
	}
	if len(tables) < 8 || len(versions) < 7 {
		t.Fatalf("found %d tables and %d schema versions in the migrations: the walk missed them", len(tables), len(versions))
	}
	for table, path := range tables {
		if !strings.Contains(doc, "`"+table+"`") {
			t.Errorf("%s creates %s, which docs/CONTRACT.md does not name", path, table)
		}
	}
	for v := range versions {
		if !strings.Contains(doc, "\n| "+v+" | ") {
			t.Errorf("schema version %s is not in docs/CONTRACT.md's table of versions", v)
		}
	}
}
