package main

import (
	"encoding/json"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/driver/sqlitedriver"
	"github.com/hookinbox/hookinbox/examples/billing"
)

func TestVersion_LinkedVersionThenModuleVersionThenDevel(t *testing.T) {
	t.Parallel()
	stamped := &debug.BuildInfo{Main: debug.Module{Path: "github.com/hookinbox/hookinbox/cmd/hookinbox", Version: "v1.4.0"}}
	tests := []struct {
		name, linked string
		bi           *debug.BuildInfo
		want         string
	}{
		{"-X main.buildVersion wins", "3e6fac3-dirty", stamped, "3e6fac3-dirty"},
		{"go install module@version", "", stamped, "v1.4.0"},
		{"a workspace build", "", &debug.BuildInfo{}, "(devel)"},
		{"no build info", "", nil, "(devel)"},
	}
	for _, tt := range tests {
		if got := versionOf(tt.linked, tt.bi); got != tt.want {
			t.Errorf("%s: version %q, want %q", tt.name, got, tt.want)
		}
	}
}

// The schema versions version prints are the newest migrations of both drivers: what
// migrate brings either database to, and what /readyz requires.
func TestVersion_PrintsGoAndSchemaVersionsOfBothDrivers(t *testing.T) {
	t.Parallel()
	latest := func(l driver.MigrationLine, err error) int {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return l.Latest()
	}
	schema := latest(sqlitedriver.Migrations())
	billingSchema := latest(billing.Migrations("sqlite"))

	r := runInProcess(t, nil, "version", "--json")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	var got buildInfo
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("version --json: %v: %q", err, r.stdout)
	}
	want := buildInfo{Version: version(), Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH, Schema: schema, BillingSchema: billingSchema}
	if got != want {
		t.Errorf("version --json = %+v, want %+v", got, want)
	}

	r = runInProcess(t, nil, "version")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	for _, line := range []string{
		"hookinbox " + version(),
		"go              " + runtime.Version(),
		"schema          " + strconv.Itoa(schema),
		"billing schema  " + strconv.Itoa(billingSchema),
	} {
		if !strings.Contains(r.stdout, line+"\n") && !strings.Contains(r.stdout, line+" ") {
			t.Errorf("version lacks %q:\n%s", line, r.stdout)
		}
	}
}
