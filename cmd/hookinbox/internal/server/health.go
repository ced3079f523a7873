package server

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"
)

// readyTimeout bounds one readiness check, so a database that hangs is reported as
// unreachable instead of hanging the probe.
const readyTimeout = 2 * time.Second

// healthz answers 200 while the process serves HTTP. It does not touch the database:
// a liveness probe that failed with the database would restart every replica during
// a database outage, which fixes nothing.
func healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok"})
}

// readiness answers /readyz: 200 when the database is reachable and its schema is
// current, 503 otherwise. It logs changes of state, not every probe.
//
// When a sink publishes to NATS the answer says whether NATS is connected, but NATS
// does not decide readiness: receiving needs only the database, and the outbox keeps
// what is to be published until NATS is back. Taking every replica out of rotation
// during a NATS outage would instead refuse the providers' deliveries.
type readiness struct {
	backend *Backend
	roles   []string
	logger  *slog.Logger
	ready   atomic.Int32 // 0 unknown, 1 ready, 2 not ready
	// gate, when set, is opened when the schema is found current.
	gate *schemaGate
}

func (rd *readiness) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	applied, latest, err := rd.backend.SchemaVersion(ctx)
	// The other migration lines this configuration needs (billing's) must be current
	// too; CheckSchema names the one that is not.
	var lineErr error
	if err == nil && applied >= latest {
		if cerr := rd.backend.CheckSchema(ctx); errors.Is(cerr, ErrSchemaNotCurrent) {
			lineErr = cerr
		} else {
			err = cerr
		}
	}
	body := map[string]any{"schema_version": applied, "schema_latest": latest, "roles": rd.roles}
	if state, ok := rd.backend.NATSState(); ok {
		body["nats"] = state
	}
	switch {
	case err != nil:
		rd.transition(ctx, 2, "hookinbox: not ready: database unreachable", "error", err.Error())
		body["status"], body["error"] = "unavailable", "database unreachable"
		delete(body, "schema_version")
		writeJSON(w, http.StatusServiceUnavailable, body)
	case applied < latest:
		rd.transition(ctx, 2, "hookinbox: not ready: schema not current", "applied", applied, "latest", latest)
		body["status"], body["error"] = "schema_not_current", "database schema is not current: run hookinbox migrate"
		writeJSON(w, http.StatusServiceUnavailable, body)
	case lineErr != nil:
		rd.transition(ctx, 2, "hookinbox: not ready: schema not current", "error", lineErr.Error())
		body["status"], body["error"] = "schema_not_current", lineErr.Error()
		writeJSON(w, http.StatusServiceUnavailable, body)
	default:
		if rd.gate != nil {
			rd.gate.open()
		}
		rd.transition(ctx, 1, "hookinbox: ready", "schema_version", applied)
		body["status"] = "ready"
		writeJSON(w, http.StatusOK, body)
	}
}

func (rd *readiness) transition(ctx context.Context, state int32, msg string, args ...any) {
	if rd.ready.Swap(state) == state {
		return
	}
	level := slog.LevelInfo
	if state != 1 {
		level = slog.LevelWarn
	}
	// The probe's own cancellation must not drop the line.
	rd.logger.Log(context.WithoutCancel(ctx), level, msg, args...)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
