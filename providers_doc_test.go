package hookinbox_test

import (
	"os"
	"strings"
	"testing"

	"github.com/hookinbox/hookinbox/provider"
)

// The README's provider table and docs/PROVIDERS.md name every provider a config
// accepts, and the README's retry window of each is the one its verifier reports.
func TestDocs_EveryProviderWithItsRetryWindow(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile("docs/PROVIDERS.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(readme), "\n## Providers\n")
	table, _, _ = strings.Cut(table, "\n## ")
	if !ok {
		t.Fatal(`README.md has no "## Providers" section`)
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 7 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		for _, name := range strings.Split(cells[1], ",") {
			rows[strings.Trim(strings.TrimSpace(name), "`")] = cells
		}
	}
	for _, name := range provider.Names() {
		cells, ok := rows[name]
		if !ok {
			t.Errorf("README's provider table has no row for %s", name)
			continue
		}
		o := provider.Options{Secrets: []string{"whsec_aG9va2luYm94LWRvYy10ZXN0"}}
		if key, ok := provider.PlaceholderPublicKey(name); ok {
			o = provider.Options{PublicKeys: []string{key}}
		}
		if name == "hmac" {
			o.Params = map[string]string{"header": "X-Signature"}
		}
		v, err := provider.New(name, o)
		if err != nil {
			t.Fatal(err)
		}
		want := strings.TrimSuffix(strings.TrimSuffix(v.RetryWindow().String(), "0s"), "0m")
		if got := strings.TrimSpace(cells[5]); got != want {
			t.Errorf("README: %s retry window %q, the verifier's %s", name, got, want)
		}
		if !strings.Contains(string(page), "\n## "+name) && !strings.Contains(string(page), "(and "+name+")") {
			t.Errorf("docs/PROVIDERS.md has no section for %s", name)
		}
	}
}
