package hookinbox_test

import (
	"path"
	"strings"
	"testing"
)

// docs/ARCHITECTURE.md's tables of packages name every package of the repository:
// this test fails when a directory with Go code (tests aside) is named neither by its
// path nor under a parent written as `parent/…`.
func TestArchitecture_NamesEveryPackage(t *testing.T) {
	t.Parallel()
	doc := readDoc(t, "docs/ARCHITECTURE.md")
	named := func(dir string) bool {
		if strings.Contains(doc, "`"+dir+"`") {
			return true
		}
		for p := path.Dir(dir); p != "."; p = path.Dir(p) {
			if strings.Contains(doc, "`"+p+"/…`") {
				return true
			}
		}
		return false
	}
	packages := map[string]bool{}
	for _, file := range repositoryFiles(t, ".go") {
		if dir := path.Dir(file); dir != "." && !strings.HasSuffix(file, "_test.go") {
			packages[dir] = true
		}
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
