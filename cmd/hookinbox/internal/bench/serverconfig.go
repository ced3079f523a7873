package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/config"
)

// endpointName is the generated config's endpoint name.
const endpointName = "bench"

// envSecret is the variable the generated config reads the random secret from.
const envSecret = "HOOKINBOX_BENCH_SECRET"

// generatedConfig is the generated configuration of a run: one endpoint for mode, its
// secret random and read from a variable only this config sees. sink is the forward
// handler's URL.
func generatedConfig(mode, provider string, workers, dispatchers int, sink string) (*config.Config, string, error) {
	secret := "whsec_bench_" + randomHex(16)
	epMode, handler := "sync", "billing"
	switch mode {
	case ModeAccept, ModeDrain:
		epMode = "async"
	case ModeForward:
		epMode, handler = "async", "forward"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "listen: 127.0.0.1:0\nendpoints:\n")
	fmt.Fprintf(&b, "  - name: %s\n    path: /webhooks/%s\n    provider: %s\n    secrets_env: [%s]\n    mode: %s\n    handler: %s\n",
		endpointName, provider, provider, envSecret, epMode, handler)
	if sink != "" {
		fmt.Fprintf(&b, "    forward: {url: %q}\n", sink)
	}
	fmt.Fprintf(&b, "worker: {concurrency: %d}\noutbox: {concurrency: %d}\nshutdown_timeout: 30s\n", workers, dispatchers)
	// Only the secret: HOOKINBOX_DATABASE_URL and HOOKINBOX_LISTEN must not redirect
	// the generated config.
	lookup := func(k string) (string, bool) {
		if k == envSecret {
			return secret, true
		}
		return "", false
	}
	cfg, err := config.Parse("(hookinbox bench's generated config)", []byte(b.String()),
		config.Options{ResolveSecrets: true, LookupEnv: lookup})
	if err != nil {
		// What the generated endpoint cannot give a provider: options (hmac's header).
		return nil, "", usagef("--provider %s: the generated endpoint has no options (send to a server configured for it with --url and --option): %v", provider, err)
	}
	return cfg, secret, nil
}

// serverLogger is the in-process server's logger: JSON lines, as serve writes them, to
// path or discarded, and the bound address of Server.Run's "listening" line sent on
// addr.
func serverLogger(path string, addr chan<- string) (*slog.Logger, func(), error) {
	var w io.Writer = io.Discard
	closeFn := func() {}
	if path != "" {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, nil, usagef("--server-log: %v", err)
		}
		w, closeFn = f, func() { _ = f.Close() }
	}
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo})
	return slog.New(&listenCatcher{Handler: h, addr: addr}), closeFn, nil
}

// listenCatcher passes records on and sends the address of Server.Run's "hookinbox:
// listening" line, which is how serve reports the port of listen: 127.0.0.1:0.
type listenCatcher struct {
	slog.Handler
	addr chan<- string
}

func (h *listenCatcher) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "hookinbox: listening" {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "addr" {
				select {
				case h.addr <- a.Value.String():
				default:
				}
				return false
			}
			return true
		})
	}
	return h.Handler.Handle(ctx, r)
}

func (h *listenCatcher) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &listenCatcher{Handler: h.Handler.WithAttrs(attrs), addr: h.addr}
}

func (h *listenCatcher) WithGroup(name string) slog.Handler {
	return &listenCatcher{Handler: h.Handler.WithGroup(name), addr: h.addr}
}
