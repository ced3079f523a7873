package server

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// schemaGate stands before the webhook endpoints while the database's schema is not
// known to be current. A webhook that arrives before `hookinbox migrate` (or during a
// deploy whose migration has not run yet) is answered 503 with Retry-After, as one
// that arrives while PostgreSQL is unreachable is: the provider retries later
// instead of counting a failure, and nothing is written. Without it, the endpoint
// would meet a missing table and answer 500.
//
// Once the schema has been found current (by the gate, or by /readyz) the gate stays
// open: migrations are forward-only, and an open gate costs one atomic load. While
// it is closed, a request triggers a check at most every schemaRecheck; the
// requests in between are answered from the last one.
type schemaGate struct {
	backend *Backend
	current atomic.Bool

	mu        sync.Mutex
	checkedAt time.Time
	notReady  bool // the last check found the schema older than this binary's
}

const (
	// schemaRecheck is how often a closed gate looks at the schema again.
	schemaRecheck = time.Second
	// schemaRetryAfter is the Retry-After of a 503 for a schema not current: a
	// migration takes a while.
	schemaRetryAfter = "30"
)

// open records that the schema was found current.
func (g *schemaGate) open() { g.current.Store(true) }

// wrap returns next behind the gate.
func (g *schemaGate) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if g.current.Load() || !g.notCurrent(r.Context()) {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Retry-After", schemaRetryAfter)
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{
			"error": "database schema is not current: retry later (run hookinbox migrate)",
		})
	})
}

// notCurrent reports whether the schema is known to be older than this binary's. A
// database that cannot be reached is not known to be: the request goes on to the
// endpoint, which answers 503 with Retry-After when the database is unavailable.
func (g *schemaGate) notCurrent(ctx context.Context) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.current.Load() {
		return false
	}
	if time.Since(g.checkedAt) < schemaRecheck {
		return g.notReady
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readyTimeout)
	defer cancel()
	err := g.backend.CheckSchema(ctx)
	g.checkedAt, g.notReady = time.Now(), errors.Is(err, ErrSchemaNotCurrent)
	if err == nil {
		g.open()
	}
	return g.notReady
}
