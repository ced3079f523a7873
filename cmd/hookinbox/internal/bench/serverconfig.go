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

// The generated config's endpoints: endpointName for every mode, and for mixed
// syncEndpointName beside it.
const (
	endpointName     = "bench"
	syncEndpointName = "bench_sync"
)

// envSecret is the variable the generated config reads the random secret from.
const envSecret = "HOOKINBOX_BENCH_SECRET"

// serverSpec is what a run's generated config says.
type serverSpec struct {
	mode, provider       string
	workers, dispatchers int
	// forward is the forward endpoint's target, a YAML flow mapping: {url: ...} or
	// {nats_subject: ...}.
	forward string
	// natsURL is the NATS server of a nats_subject target.
	natsURL string
}

// generatedConfig is the generated configuration of a run: the endpoints of s.mode,
// their secret random and read from a variable only this config sees.
//
//	sync     endpointName: sync, billing
//	accept   endpointName: async, billing (drain too)
//	forward  endpointName: async, forward to s.forward
//	mixed    endpointName: async, billing; syncEndpointName: sync, billing
func generatedConfig(s serverSpec) (*config.Config, string, error) {
	secret := "whsec_bench_" + randomHex(16)
	var b strings.Builder
	fmt.Fprintf(&b, "listen: 127.0.0.1:0\n")
	if s.natsURL != "" {
		fmt.Fprintf(&b, "nats_url: %q\n", s.natsURL)
	}
	fmt.Fprintf(&b, "endpoints:\n")
	endpoint := func(name, path, mode, handler string) {
		fmt.Fprintf(&b, "  - name: %s\n    path: %s\n    provider: %s\n    secrets_env: [%s]\n    mode: %s\n    handler: %s\n",
			name, path, s.provider, envSecret, mode, handler)
	}
	path := "/webhooks/" + s.provider
	switch s.mode {
	case ModeSync:
		endpoint(endpointName, path, "sync", "billing")
	case ModeAccept, ModeDrain:
		endpoint(endpointName, path, "async", "billing")
	case ModeForward, ModeDispatch:
		endpoint(endpointName, path, "async", "forward")
		fmt.Fprintf(&b, "    forward: %s\n", s.forward)
	case ModeMixed:
		endpoint(endpointName, path, "async", "billing")
		endpoint(syncEndpointName, path+"-sync", "sync", "billing")
	default:
		return nil, "", fmt.Errorf("bench: no generated config for --mode %s", s.mode)
	}
	fmt.Fprintf(&b, "worker: {concurrency: %d}\noutbox: {concurrency: %d}\nshutdown_timeout: 30s\n", s.workers, s.dispatchers)
	// Only the secret: HOOKINBOX_DATABASE_URL, HOOKINBOX_LISTEN and HOOKINBOX_NATS_URL
	// must not redirect the generated config.
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
		return nil, "", usagef("--provider %s: the generated endpoint has no options (send to a server configured for it with --url and --option): %v", s.provider, err)
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
