package hookinbox_test

import (
	"io/fs"
	"os"
	"path/filepath"
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
	contract, err := os.ReadFile("docs/CONTRACT.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(contract)
	tables := map[string]string{} // table → the first migration that creates it
	versions := map[string]bool{}
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == ".git") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".sql") || !strings.Contains(filepath.ToSlash(path), "/migrations/") {
			return nil
		}
		body, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range createdTable.FindAllStringSubmatch(string(body), -1) {
			if _, seen := tables[m[1]]; !seen {
				tables[m[1]] = path
			}
		}
		if strings.HasPrefix(filepath.ToSlash(path), "driver/") {
			versions[strings.TrimLeft(strings.SplitN(d.Name(), "_", 2)[0], "0")] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
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
