// Command hookinbox runs hookinbox without writing Go: it receives webhooks on the
// endpoints of a YAML config, verifies them, records each once in its database
// (PostgreSQL, or without a database URL the SQLite file ./hookinbox.db) and applies
// the built-in handlers or forwards them through the outbox (to an HTTP service or
// NATS JetStream), and gives operators the commands to watch and repair the inbox and
// the outbox.
//
//	hookinbox serve   --config hookinbox.yaml   # SQLite: creates and migrates ./hookinbox.db
//	hookinbox status  --config hookinbox.yaml --json
//	hookinbox migrate --database-url postgres://...   # PostgreSQL: an explicit step
//
// Exit codes: 0 success, 1 failure (database error, target not found, a send that was
// not answered 2xx), 2 usage or configuration error. serve exits 0 after a graceful
// shutdown, 1 if the shutdown deadline passed, and 128+N on a second signal N.
package main

import (
	"context"
	"io"
	"os"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr, os.LookupEnv))
}

// run executes the command line args and returns the process's exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	a := &app{stdout: stdout, stderr: stderr, lookupEnv: lookupEnv}
	root := a.rootCommand()
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err != nil {
		a.printError(err)
	}
	return exitCode(err)
}
