package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/hookinbox/hookinbox/driver/pgxdriver"
	"github.com/hookinbox/hookinbox/examples/billing"
)

// buildVersion is the version, set at link time for builds that are not made by
// go install module@version (the go command stamps no commit in a go.work
// workspace, so scripts/image.sh passes git describe's):
//
//	go build -ldflags "-X main.buildVersion=v1.2.3" ./cmd/hookinbox
var buildVersion string

// buildInfo is what `hookinbox version` reports: enough to tell which binary answers,
// and which schema it expects before it is deployed (readiness fails until migrate
// has brought the database to Schema).
type buildInfo struct {
	Version       string `json:"version"`
	Go            string `json:"go"`
	Platform      string `json:"platform"`
	Schema        int    `json:"schema_version"`
	BillingSchema int    `json:"billing_schema_version"`
}

func readBuildInfo() (buildInfo, error) {
	info := buildInfo{Version: version(), Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	// The PostgreSQL and SQLite lines are numbered alike;
	// TestVersion_PrintsGoAndSchemaVersionsOfBothDrivers holds them to it.
	line, err := pgxdriver.Migrations()
	if err != nil {
		return info, err
	}
	info.Schema = line.Latest()
	bline, err := billing.Migrations("postgres")
	if err != nil {
		return info, err
	}
	info.BillingSchema = bline.Latest()
	return info, nil
}

// version is the binary's version: -X main.buildVersion, else the module version the
// go command stamped (go install module@version), else "(devel)".
func version() string {
	bi, _ := debug.ReadBuildInfo()
	return versionOf(buildVersion, bi)
}

func versionOf(linked string, bi *debug.BuildInfo) string {
	if linked != "" {
		return linked
	}
	if bi != nil && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

func (a *app) versionCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, the Go version and the schema versions this binary migrates to",
		Long: `Print the binary's version (set with -ldflags "-X main.buildVersion=v1.2.3", else
the module version go install stamped, else "(devel)"), the Go version and platform
it was built with, and the newest schema version of hookinbox's tables and of
billing's: what migrate brings a database to, and what serve's /readyz requires.
It connects to nothing.`,
		Example: `  hookinbox version
  hookinbox version --json`,
		Args: args(cobra.NoArgs),
		RunE: func(*cobra.Command, []string) error {
			info, err := readBuildInfo()
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(a.stdout).Encode(info)
			}
			fmt.Fprintf(a.stdout, "hookinbox %s\n", info.Version)
			fmt.Fprintf(a.stdout, "go              %s %s\n", info.Go, info.Platform)
			fmt.Fprintf(a.stdout, "schema          %d\n", info.Schema)
			fmt.Fprintf(a.stdout, "billing schema  %d\n", info.BillingSchema)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}
