package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/hookinbox/hookinbox/internal/config"
	"github.com/hookinbox/hookinbox/internal/testdb"
)

// openTestBackend opens a backend on a fresh schema, without endpoints.
func openTestBackend(t *testing.T) *Backend {
	t.Helper()
	db := testdb.New(t)
	u, err := url.Parse(testdb.URL())
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", db.Schema)
	u.RawQuery = q.Encode()
	cfg, err := config.Default(config.Options{LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(context.Background(), u.String(), cfg, OpenOptions{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

func readyz(t *testing.T, b *Backend) (int, map[string]any) {
	t.Helper()
	rec := httptest.NewRecorder()
	(&readiness{backend: b, logger: discardLogger()}).ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	var body map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatalf("/readyz body %q: %v", rec.Body, err)
	}
	return rec.Code, body
}

func TestReadyz_NotReadyUntilMigrated(t *testing.T) {
	t.Parallel()
	b := openTestBackend(t)

	code, body := readyz(t, b)
	if code != 503 || body["status"] != "schema_not_current" {
		t.Errorf("/readyz before migrate = %d %v, want 503 schema_not_current", code, body)
	}
	if err := b.CheckSchema(context.Background()); !errors.Is(err, ErrSchemaNotCurrent) {
		t.Errorf("CheckSchema before migrate = %v", err)
	}

	if err := b.Inbox.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	code, body = readyz(t, b)
	if code != 200 || body["status"] != "ready" || body["schema_version"] != body["schema_latest"] {
		t.Errorf("/readyz after migrate = %d %v, want 200 ready", code, body)
	}
	if err := b.CheckSchema(context.Background()); err != nil {
		t.Errorf("CheckSchema after migrate = %v", err)
	}
}

func TestHealthz_AnswersWithoutTheDatabase(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	healthz(rec, httptest.NewRequest("GET", "/healthz", nil))
	if rec.Code != 200 {
		t.Errorf("/healthz = %d", rec.Code)
	}
}

func TestOpen_RefusesUnsupportedDatabases(t *testing.T) {
	t.Parallel()
	cfg, _ := config.Default(config.Options{LookupEnv: func(string) (string, bool) { return "", false }})
	for _, u := range []string{"mysql://127.0.0.1/db", "sqlite:///tmp/x.db", "::not a url", "postgres://127.0.0.1/db?pool_max_conns=many"} {
		if _, err := Open(context.Background(), u, cfg, OpenOptions{Logger: discardLogger()}); !errors.Is(err, ErrUnsupportedDatabase) {
			t.Errorf("Open(%q) = %v, want ErrUnsupportedDatabase", u, err)
		}
	}
}
