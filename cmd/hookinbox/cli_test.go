package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// runInProcess runs the command line in this process with an empty environment.
func runInProcess(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr, func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	})
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// allCommands returns every command of the tree, root first.
func allCommands() []*cobra.Command {
	a := &app{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, lookupEnv: func(string) (string, bool) { return "", false }}
	var all []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		all = append(all, c)
		for _, sub := range c.Commands() {
			if sub.Name() != "help" && sub.Name() != "completion" {
				walk(sub)
			}
		}
	}
	walk(a.rootCommand())
	return all
}

func TestHelp_EveryCommandDescribesItselfAndExitsZero(t *testing.T) {
	t.Parallel()
	for _, c := range allCommands() {
		path := strings.Fields(c.CommandPath())[1:]
		t.Run(strings.Join(append([]string{"hookinbox"}, path...), "_"), func(t *testing.T) {
			t.Parallel()
			c := findCommand(t, c.CommandPath()) // a tree of its own: cobra mutates it
			r := runInProcess(t, nil, append(path, "--help")...)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			if !strings.Contains(r.stdout, "Usage:\n  "+c.UseLine()) {
				t.Errorf("help lacks the usage line %q:\n%s", c.UseLine(), r.stdout)
			}
			if c.Short == "" || !strings.Contains(r.stdout, strings.TrimSpace(firstLine(c.Long, c.Short))) {
				t.Errorf("help lacks a description:\n%s", r.stdout)
			}
			// Every flag the help mentions with -- exists on the command.
			for _, word := range strings.Fields(r.stdout) {
				name, ok := strings.CutPrefix(strings.Trim(word, "(),.;:\"'`[]|"), "--")
				if !ok || name == "" {
					continue
				}
				name, _, _ = strings.Cut(name, "=")
				if name == "help" || name == "version" { // cobra's own
					continue
				}
				if c.Flags().Lookup(name) == nil && !otherCommandFlag(name) {
					t.Errorf("help mentions --%s, which is not a flag of %s or of another command", name, c.CommandPath())
				}
			}
		})
	}
}

func findCommand(t *testing.T, path string) *cobra.Command {
	t.Helper()
	for _, c := range allCommands() {
		if c.CommandPath() == path {
			return c
		}
	}
	t.Fatalf("no command %q", path)
	return nil
}

func firstLine(long, short string) string {
	if long == "" {
		return short
	}
	line, _, _ := strings.Cut(long, "\n")
	return line
}

// otherCommandFlag reports whether some command has the flag (help texts refer to
// other commands' flags, e.g. serve's help to "hookinbox migrate").
func otherCommandFlag(name string) bool {
	for _, c := range allCommands() {
		if c.Flags().Lookup(name) != nil {
			return true
		}
	}
	return false
}

// These commands and flags are the binary's interface to scripts: renaming or
// removing one breaks them.
func TestCommands_ContractFlagsExist(t *testing.T) {
	t.Parallel()
	want := map[string][]string{
		"hookinbox serve":        {"config"},
		"hookinbox migrate":      {"database-url"},
		"hookinbox status":       {"json"},
		"hookinbox events list":  {"needs-review", "endpoint", "json"},
		"hookinbox events show":  {},
		"hookinbox events retry": {"all-needs-review"},
		"hookinbox outbox list":  {"needs-review", "pending", "json"},
		"hookinbox outbox retry": {"all-needs-review"},
		"hookinbox cleanup":      {"older-than", "dry-run"},
		"hookinbox send":         {"url", "provider", "secret", "type"},
		"hookinbox probe": {"target", "provider", "secret-env", "secret-file", "private-key-file",
			"check-database-url", "check-sql", "check-url", "facts", "scenario", "time-scale", "concurrency", "json", "junit"},
	}
	found := map[string]*cobra.Command{}
	for _, c := range allCommands() {
		found[c.CommandPath()] = c
	}
	for path, flags := range want {
		c, ok := found[path]
		if !ok {
			t.Errorf("no command %q", path)
			continue
		}
		for _, f := range flags {
			if c.Flags().Lookup(f) == nil {
				t.Errorf("%s has no --%s", path, f)
			}
		}
	}
	// Every command that touches the database takes both ways to name it.
	for _, c := range allCommands() {
		if c.Runnable() && c.Flags().Lookup("config") != nil {
			for _, f := range []string{"database-url"} {
				if c.Flags().Lookup(f) == nil {
					t.Errorf("%s has --config but no --%s", c.CommandPath(), f)
				}
			}
		}
	}
}

func TestRun_ExitCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		args []string
		code int
		msg  string
	}{
		{"no command prints help", nil, nil, 0, ""},
		{"unknown command", nil, []string{"serv"}, 2, `unknown command "serv" (did you mean serve?)`},
		{"unknown flag", nil, []string{"status", "--jsn"}, 2, "unknown flag: --jsn"},
		{"events without a command", nil, []string{"events"}, 2, "events needs a command"},
		{"events show with two arguments", nil, []string{"events", "show", "stripe", "billing"}, 2, "accepts 3 arg(s)"},
		{"events retry with both forms", nil, []string{"events", "retry", "stripe", "billing", "evt_1", "--all-needs-review"}, 2, "not both"},
		{"outbox without a command", nil, []string{"outbox"}, 2, "outbox needs a command"},
		{"outbox retry with both forms", nil, []string{"outbox", "retry", "7", "--all-needs-review"}, 2, "not both"},
		{"outbox retry without an id", nil, []string{"outbox", "retry"}, 2, "want ID or --all-needs-review"},
		{"outbox retry with a bad id", nil, []string{"outbox", "retry", "evt_1"}, 2, `ID "evt_1" is not an outbox message id`},
		{"outbox list with a bad limit", nil, []string{"outbox", "list", "--limit", "0"}, 2, "--limit must be at least 1"},
		{"no database anywhere and no ./hookinbox.db", nil, []string{"status"}, 1, "no SQLite database at ./hookinbox.db (the default without a database URL)"},
		{"unsupported --database-url", nil, []string{"migrate", "--database-url", "mysql://x/y"}, 2, `--database-url: unsupported database URL: scheme "mysql" (want postgres://, postgresql:// or sqlite:PATH)`},
		{"unsupported HOOKINBOX_DATABASE_URL", map[string]string{"HOOKINBOX_DATABASE_URL": "mysql://x/y"}, []string{"status"}, 2, `config: HOOKINBOX_DATABASE_URL: unsupported database URL: scheme "mysql"`},
		{"sqlite:// is refused", nil, []string{"status", "--database-url", "sqlite:///tmp/x.db"}, 2, "--database-url: unsupported database URL: write sqlite:PATH, not sqlite://PATH"},
		{"sqlite file that does not exist", nil, []string{"events", "list", "--database-url", "sqlite:/nonexistent/hookinbox.db"}, 1, "no SQLite database at /nonexistent/hookinbox.db (--database-url)"},
		{"sqlite file in a missing directory", nil, []string{"migrate", "--database-url", "sqlite:/nonexistent/hookinbox.db"}, 1, "directory /nonexistent does not exist"},
		{"serve without a config", nil, []string{"serve"}, 2, "no config file: pass --config FILE or set HOOKINBOX_CONFIG"},
		{"missing config file", nil, []string{"status", "--config", "/nonexistent/hookinbox.yaml"}, 2, "cannot read"},
		{"unreachable database", nil, []string{"migrate", "--database-url", "postgres://postgres@127.0.0.1:1/none?connect_timeout=5"}, 1, "127.0.0.1"},
		{"database URL from the environment", map[string]string{"HOOKINBOX_DATABASE_URL": "postgres://postgres@127.0.0.1:1/none?connect_timeout=5"}, []string{"status"}, 1, ""},
		{"send without a secret", nil, []string{"send"}, 2, "no signing secret"},
		{"send with an empty secret variable", nil, []string{"send", "--secret-env", "NOPE"}, 2, "environment variable NOPE is empty or unset"},
		{"send --id with several types", nil, []string{"send", "--secret", "s", "--id", "evt_1", "--type", "invoice.paid,invoice.voided"}, 2, "--id names one event"},
		{"send --file with a template flag", nil, []string{"send", "--secret", "s", "--file", "x.json", "--invoice", "in_1"}, 2, "--invoice shapes a template"},
		{"send to an unknown provider", nil, []string{"send", "--secret", "s", "--provider", "bitbucket"}, 2, `--provider bitbucket: unknown provider "bitbucket"`},
		{"send with an option the scheme lacks", nil, []string{"send", "--secret", "s", "--option", "header=X-Sig"}, 2, `takes no option "header"`},
		{"send --file --id to a scheme that reads the body", nil, []string{"send", "--secret", "s", "--file", "testdata/invoice_paid.json", "--id", "evt_1"}, 2, "stripe takes them from the body"},
		{"send --file that is not JSON", nil, []string{"send", "--secret", "s", "--file", "cli_test.go"}, 2, "not a JSON object"},
		{"send to nobody", nil, []string{"send", "--secret", "s", "--url", "http://127.0.0.1:1/x", "--timeout", "5s"}, 1, "1 of 1 requests were not answered 2xx"},
		{"cleanup with a non-positive retention", nil, []string{"cleanup", "--older-than", "0s"}, 2, "--older-than must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runInProcess(t, tt.env, tt.args...)
			if r.code != tt.code {
				t.Errorf("exit %d, want %d (stderr %q)", r.code, tt.code, r.stderr)
			}
			if tt.msg != "" && !strings.Contains(r.stderr, tt.msg) {
				t.Errorf("stderr %q does not contain %q", r.stderr, tt.msg)
			}
			if tt.code != 0 && strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
				t.Errorf("stderr is not one line: %q", r.stderr)
			}
		})
	}
}

// Every refused config gives one line naming the key, and exit code 2, before serve
// touches anything.
func TestServe_InvalidConfigIsRefusedWithTheKey(t *testing.T) {
	t.Parallel()
	const base = `
database_url: postgres://127.0.0.1:1/unused
endpoints:
  - name: billing
    path: /webhooks/stripe
    provider: stripe
    secrets_env: [E2E_STRIPE_SECRET]
    handler: billing
`
	forward := func(target string) string {
		return "  - name: gateway\n    path: /webhooks/github\n    provider: github\n    secrets_env: [E2E_STRIPE_SECRET]\n    mode: async\n    handler: forward\n" + target
	}
	tests := []struct {
		name, config, key, reason string
	}{
		{"unknown provider", strings.Replace(base, "provider: stripe", "provider: strype", 1), "endpoints[0].provider", `unknown provider "strype"`},
		{"empty secret", strings.Replace(base, "E2E_STRIPE_SECRET", "E2E_EMPTY_SECRET", 1), "endpoints[0].secrets_env[0]", "E2E_EMPTY_SECRET is empty or unset"},
		{"duplicate path", base + "  - {name: other, path: /webhooks/stripe, provider: stripe, secrets_env: [E2E_STRIPE_SECRET], handler: none}\n", "endpoints[1].path", `duplicate path "/webhooks/stripe"`},
		{"retention under the retry window", base + "retention: {processed: 24h}\n", "retention.processed", "shorter than the 72h0m0s retry window of provider stripe"},
		{"tolerance zero", base + "    tolerance: 0s\n", "endpoints[0].tolerance", "must be positive"},
		{"tolerance negative", base + "    tolerance: -5m\n", "endpoints[0].tolerance", "must be positive"},
		{"unknown key", base + "    secret_env: [X]\n", "endpoints[0].secret_env", "unknown key"},
		{"inline secret", base + "    secret: whsec_inline\n", "endpoints[0].secret", "inline secrets are not allowed"},
		{"forward without a target", base + forward(""), "endpoints[1].forward", "required with handler forward"},
		{"forward to both", base + forward("    forward: {url: 'http://127.0.0.1:9000/events', nats_subject: hooks.github}\n"), "endpoints[1].forward", "give url or nats_subject, not both"},
		{"forward to neither", base + forward("    forward: {}\n"), "endpoints[1].forward", "needs url"},
		{"forward to a bad url", base + forward("    forward: {url: '127.0.0.1:9000/events'}\n"), "endpoints[1].forward.url", "not"},
		{"forward to a wildcard subject", base + forward("    forward: {nats_subject: 'hooks.*'}\n"), "endpoints[1].forward.nats_subject", "wildcard"},
		{"outbox delivery timeout above lease", base + "outbox: {lease: 5s, delivery_timeout: 6s}\n", "outbox.delivery_timeout", "shorter than outbox.lease"},
		{"bad nats_url", "nats_url: 'http://127.0.0.1:4222'\n" + base, "nats_url", "unknown scheme"},
		{"no endpoints", "database_url: postgres://127.0.0.1:1/unused\n", "endpoints", "at least one endpoint is required"},
		{"database_url of another database", strings.Replace(base, "postgres://", "mysql://", 1), "database_url", `unsupported database URL: scheme "mysql" (want postgres://, postgresql:// or sqlite:PATH)`},
		{"database_url and sqlite_path", base + "sqlite_path: hookinbox.db\n", "sqlite_path", "give database_url or sqlite_path, not both"},
	}
	env := childEnv("E2E_STRIPE_SECRET=whsec_x", "E2E_EMPTY_SECRET=")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "hookinbox.yaml")
			if err := os.WriteFile(path, []byte(tt.config), 0o600); err != nil {
				t.Fatal(err)
			}
			r := runBinary(t, env, "serve", "--config", path)
			if r.code != 2 {
				t.Errorf("exit %d, want 2 (stderr %q)", r.code, r.stderr)
			}
			want := "hookinbox: config " + path + ": " + tt.key + ": "
			if !strings.HasPrefix(r.stderr, want) || !strings.Contains(r.stderr, tt.reason) || strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("stderr = %q, want one line starting %q and containing %q", r.stderr, want, tt.reason)
			}
			if strings.Contains(r.stderr, "whsec_") {
				t.Errorf("stderr contains a secret: %q", r.stderr)
			}
		})
	}
}
