package hookinbox_test

import (
	"os"
	"strings"
	"testing"
)

// The README's library section is Example_receive's body, which go test runs: this
// test fails when the two drift apart.
func TestREADME_LibraryCodeIsExampleReceive(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("example_receive_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## The library\n")
	if !ok {
		t.Fatal(`README.md has no "## The library" section`)
	}
	_, block, ok := strings.Cut(section, "```go\n")
	block, _, closed := strings.Cut(block, "\n```")
	if !ok || !closed {
		t.Fatal("the library section has no go code block")
	}
	_, body, ok := strings.Cut(string(src), "func Example_receive() {\n")
	body, _, ended := strings.Cut(body, "\t// Output:")
	if !ok || !ended {
		t.Fatal("example_receive_test.go has no Example_receive with an Output block")
	}
	lines := strings.Split(strings.TrimRight(body, "\n"), "\n")
	for n, l := range lines {
		lines[n] = strings.TrimPrefix(l, "\t")
	}
	if want := strings.Join(lines, "\n"); block != want {
		t.Fatalf("README.md's library code is not Example_receive's body; copy it again.\nREADME:\n%s\n\nexample:\n%s", block, want)
	}
}
