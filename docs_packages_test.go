package hookinbox_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docs/ARCHITECTURE.md's tables of packages name every package of the repository:
// this test fails when a directory with Go code (tests aside) is named neither by its
// path nor under a parent written as `parent/…`.
func TestArchitecture_NamesEveryPackage(t *testing.T) {
	t.Parallel()
	architecture, err := os.ReadFile("docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(architecture)
	named := func(dir string) bool {
		if strings.Contains(doc, "`"+dir+"`") {
			return true
		}
		for p := filepath.Dir(dir); p != "."; p = filepath.Dir(p) {
			if strings.Contains(doc, "`"+filepath.ToSlash(p)+"/…`") {
				return true
			}
		}
		return false
	}
	packages := map[string]bool{}
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == ".git") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			if dir := filepath.Dir(path); dir != "." {
				packages[filepath.ToSlash(dir)] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(packages) < 30 {
		t.Fatalf("found %d packages: the walk missed them", len(packages))
	}
	for dir := range packages {
		if !named(dir) {
			t.Errorf("package %s is not in docs/ARCHITECTURE.md's tables of packages", dir)
		}
	}
}
