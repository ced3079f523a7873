package hookinbox_test

import (
	"os"
	"strings"
	"testing"
)

// The README's library section shows examples/library/main.go whole, which
// examples/library's test builds and runs: this test fails when the two drift apart.
func TestREADME_LibrarySectionIsExamplesLibraryWhole(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("examples/library/main.go")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## The library\n")
	if !ok {
		t.Fatal(`README.md has no "## The library" section`)
	}
	_, block, ok := strings.Cut(section, "```go\n")
	block, _, closed := strings.Cut(block, "\n```\n")
	if !ok || !closed {
		t.Fatal("the library section has no go code block")
	}
	if want := strings.TrimSuffix(string(src), "\n"); block != want {
		t.Fatalf("README.md's library code is not examples/library/main.go; copy the file again.\nREADME:\n%s\n\nfile:\n%s", block, want)
	}
}
