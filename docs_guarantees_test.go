package hookinbox_test

import (
	"fmt"
	"path"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// A guarantee's row in CONTRACT's table: | G1 | definition | how |.
var guaranteeRow = regexp.MustCompile(`(?m)^\| (G[1-8]) \| (.+?) \| .+ \|$`)

// A guarantee's name where a list item or a table cell starts, not as a link: where a
// definition follows. `| [G1](CONTRACT.md#guarantees) |` and "(G5)" in a sentence are
// references.
var guaranteeLabel = regexp.MustCompile(`(?m)^[ \t]*(?://[ \t]*)?(?:[-*+][ \t]+|\|[ \t]*)\**(G[1-8])\b`)

// sameWords is how many words of a definition in a row make a copy of it: seven
// already match "a second Event object for the same", which every document uses to
// say what providers do.
const sameWords = 8

// The guarantees are defined once, in docs/CONTRACT.md: this test fails when another
// document or a Go file defines one again, as a list item or table cell that starts
// with its name, or when a document (a .md file, a package's doc.go) copies eight
// words in a row of a definition. So a guarantee changes in one place, and everything
// else links to it. Comments in other Go files may say in their own words which
// guarantee a line or a test keeps.
func TestContract_IsTheOnlyStatementOfTheGuarantees(t *testing.T) {
	t.Parallel()
	contract := readDoc(t, "docs/CONTRACT.md")
	rows := guaranteeRow.FindAllStringSubmatch(contract, -1)
	if len(rows) != 8 {
		t.Fatalf("docs/CONTRACT.md's table of guarantees has %d rows of G1–G8, want 8", len(rows))
	}
	definitions := map[string]string{} // eight words of a definition → its guarantee
	for _, m := range rows {
		words := strings.Fields(plainWords(m[2]))
		for i := 0; i+sameWords <= len(words); i++ {
			definitions[strings.Join(words[i:i+sameWords], " ")] = m[1]
		}
	}

	// The check must see the copies it is for: doc.go's former list, and a
	// definition reworded around a copied run of words.
	planted := "//   - G4. " + rows[3][2] + "\n// Workers: an async receipt is retried with backoff until processed or needs review.\n"
	if found := restatements("doc.go", planted, definitions); len(found) != 3 {
		t.Fatalf("planted copies: found %q, want the label, the definition and the run of G7's words", found)
	}

	for _, suffix := range []string{".md", ".go"} {
		for _, file := range repositoryFiles(t, suffix) {
			if file == "docs/CONTRACT.md" {
				continue
			}
			for _, r := range restatements(file, readDoc(t, file), definitions) {
				t.Errorf("%s: %s; link to docs/CONTRACT.md#guarantees instead", file, r)
			}
		}
	}
}

// restatements returns the places where file, whose content is body, defines a
// guarantee again: a label that starts a definition, and (in documents) runs of
// sameWords words of a definition.
func restatements(file, body string, definitions map[string]string) []string {
	var found []string
	for _, m := range guaranteeLabel.FindAllStringSubmatch(body, -1) {
		found = append(found, fmt.Sprintf("%q starts a definition of %s", strings.TrimSpace(m[0]), m[1]))
	}
	if !strings.HasSuffix(file, ".md") && path.Base(file) != "doc.go" {
		return found
	}
	words := strings.Fields(plainWords(body))
	window := func(i int) string { return strings.Join(words[i:i+sameWords], " ") }
	for i := 0; i+sameWords <= len(words); i++ {
		g, ok := definitions[window(i)]
		if !ok {
			continue
		}
		end := i + 1 // one finding for a run of copied words, however long
		for end+sameWords <= len(words) && definitions[window(end)] != "" {
			end++
		}
		found = append(found, fmt.Sprintf("%q copies %s's definition", strings.Join(words[i:end+sameWords-1], " "), g))
		i = end + sameWords - 2
	}
	return found
}

// plainWords lower-cases s and turns everything but letters and digits into spaces,
// so that markup, comment markers and line breaks do not hide a copy.
func plainWords(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return unicode.ToLower(r)
		}
		return ' '
	}, s)
}
