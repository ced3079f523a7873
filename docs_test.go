package hookinbox_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The documentation tests (docs_*_test.go) read the repository from its root, the
// root package's directory.

// readDoc returns the repository file at path.
func readDoc(t *testing.T, path string) string {
	t.Helper()
	body, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

// repositoryFiles returns the path, with slashes, of every file of the repository
// whose name ends with suffix, outside .git and testdata directories.
func repositoryFiles(t *testing.T, suffix string) []string {
	t.Helper()
	var paths []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == ".git") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, suffix) {
			paths = append(paths, filepath.ToSlash(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return paths
}
