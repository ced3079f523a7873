package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/config"
)

const consoleTestToken = "console-test-token-0123456789"

func consoleConfig(t *testing.T, dir, listen string) *config.Config {
	t.Helper()
	yaml := fmt.Sprintf(`
sqlite_path: %s
endpoints:
  - {name: billing, path: /webhooks/stripe, provider: stripe, secrets_env: [SECRET], mode: async, handler: none}
console:
  listen: %q
  tokens:
    - {name: alice, token_env: CONSOLE_TOKEN}
  redact: [card_number]
`, filepath.Join(dir, "console.db"), listen)
	env := map[string]string{"SECRET": "whsec_test", "CONSOLE_TOKEN": consoleTestToken}
	cfg, err := config.Parse(filepath.Join(dir, "hookinbox.yaml"), []byte(yaml), config.Options{
		ResolveSecrets: true, LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
	})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func consoleServer(t *testing.T, listen string) *Server {
	t.Helper()
	dir := t.TempDir()
	cfg := consoleConfig(t, dir, listen)
	b, err := Open(context.Background(), cfg.Database, cfg, OpenOptions{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	if _, err := b.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return New(cfg, b, NewMetrics(), discardLogger())
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestConsole_ServedOnTheMainListenerByDefault(t *testing.T) {
	t.Parallel()
	s := consoleServer(t, "")
	own, err := s.console(nil)
	if err != nil || own != nil {
		t.Fatalf("console(): %v %v", own, err)
	}
	srv := httptest.NewServer(s.mux)
	defer srv.Close()
	if code, body := get(t, srv.URL+"/console/login"); code != http.StatusOK || !strings.Contains(body, `name="token"`) {
		t.Fatalf("GET /console/login: %d", code)
	}
	if code, _ := get(t, srv.URL+"/console/"); code != http.StatusUnauthorized {
		t.Fatalf("GET /console/ without a session: %d, want 401", code)
	}
}

func TestConsole_ServedOnItsOwnListenerOnly(t *testing.T) {
	t.Parallel()
	s := consoleServer(t, "127.0.0.1:0")
	ls, err := Listen(s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	ln := ls.console
	own, err := s.console(ln)
	if err != nil || own == nil {
		t.Fatalf("console(): %v", err)
	}
	go func() { _ = own.Serve(ln) }()
	defer own.Close()
	if code, _ := get(t, "http://"+ln.Addr().String()+"/console/login"); code != http.StatusOK {
		t.Fatalf("console listener: %d", code)
	}
	main := httptest.NewServer(s.mux)
	defer main.Close()
	if code, _ := get(t, main.URL+"/console/login"); code != http.StatusNotFound {
		t.Fatalf("main listener serves the console: %d, want 404", code)
	}
}
