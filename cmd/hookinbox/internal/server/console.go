package server

import (
	"log/slog"

	"github.com/hookinbox/hookinbox"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/console"
)

// newConsole builds the operator console of cfg.Console on backend's database. Its
// retries wake this process's workers and dispatcher.
func newConsole(cfg *config.Config, backend *Backend, logger *slog.Logger) (*console.Console, error) {
	cc := cfg.Console
	tokens := make([]console.Token, len(cc.Tokens))
	for i, t := range cc.Tokens {
		tokens[i] = console.Token{Name: t.Name, Secret: t.Secret, ReadOnly: t.ReadOnly}
	}
	endpoints := make([]console.Endpoint, len(cfg.Endpoints))
	for i, ep := range cfg.Endpoints {
		// Receipts are stored under the verifier's name (svix endpoints as
		// standardwebhooks).
		endpoints[i] = console.Endpoint{Name: ep.Name, Provider: ep.Verifier.Name(), Sync: ep.Mode == hookinbox.ModeSync}
	}
	return console.New(backend.Executor, console.Config{
		Path: cc.Path, Tokens: tokens, Endpoints: endpoints, Redact: cc.Redact, SecureCookie: cc.SecureCookie,
		Logger: logger,
		RetriedFunc: func() {
			backend.Operator.Wake()
			backend.Outbox.Notify()
		},
	})
}
