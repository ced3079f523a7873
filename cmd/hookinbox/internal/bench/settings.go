package bench

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Settings are the settings a run's figures depend on.
type Settings struct {
	Database          string `json:"database,omitempty"` // postgres or sqlite
	ServerVersion     string `json:"server_version,omitempty"`
	Fsync             string `json:"fsync,omitempty"`
	SynchronousCommit string `json:"synchronous_commit,omitempty"`
	Autovacuum        string `json:"autovacuum,omitempty"`
	// TLS is "on" when bench's own connection to PostgreSQL is encrypted, else "off".
	// The in-process server, the naive receiver and pgbench connect with the same URL,
	// so its sslmode (libpq's and pgx's default, prefer, encrypts when the server
	// offers TLS) decides for all of them; every round trip then pays for it on both
	// sides, and a receiver that makes more round trips pays more.
	TLS string `json:"tls,omitempty"`
	// PoolMaxConns is the in-process server's pool size.
	PoolMaxConns int32 `json:"pool_max_conns,omitempty"`
	// SyncFlushers is --sync-flushers, when given.
	SyncFlushers int `json:"sync_flushers,omitempty"`
	// AcceptFlushers is --accept-flushers, when given.
	AcceptFlushers int    `json:"accept_flushers,omitempty"`
	Workers        int    `json:"workers,omitempty"`
	Dispatchers    int    `json:"dispatchers,omitempty"`
	Cores          int    `json:"cores"`
	GOMAXPROCS     int    `json:"gomaxprocs"`
	GoVersion      string `json:"go_version"`
	// GOGC and GOMEMLIMIT are the environment's, when set: they move a run's CPU per
	// request (GOGC=200 took a tenth off bench's process at accept, docs/BENCHMARKS.md).
	GOGC       string `json:"gogc,omitempty"`
	GOMEMLIMIT string `json:"gomemlimit,omitempty"`
	// LoadAverage is the machine's 1-minute load average before the run (Linux): on a
	// machine that other work shares, the figures are of what was left.
	LoadAverage float64 `json:"load_average,omitempty"`
	// SettingsError says why the database's settings could not be read.
	SettingsError string `json:"settings_error,omitempty"`
	// Checkpoint is "before each run" when bench ran CHECKPOINT before hookinbox's
	// run and before pgbench's, else why not (the role may not).
	Checkpoint string `json:"checkpoint,omitempty"`
}

// checkpoint runs CHECKPOINT before a measured run, so that no run starts with a
// checkpoint due: after one, every page's first change writes the whole page to the
// WAL, and a checkpoint that falls in one run and not the other moves their ratio.
// It needs a superuser or pg_checkpoint; without, the settings say so and the runs go
// on.
func (s *Settings) checkpoint(ctx context.Context, admin *pgxpool.Pool) {
	if s.Checkpoint != "" && s.Checkpoint != checkpointed {
		return // refused once: it will be again
	}
	if _, err := admin.Exec(ctx, "CHECKPOINT"); err != nil {
		s.Checkpoint = "not run: " + err.Error()
		return
	}
	s.Checkpoint = checkpointed
}

const checkpointed = "before each run"

// sqlConnectionTLS says whether this session's connection is encrypted.
const sqlConnectionTLS = `SELECT coalesce((SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()), false)`

func hostSettings() Settings {
	s := Settings{Cores: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), GoVersion: runtime.Version(),
		GOGC: os.Getenv("GOGC"), GOMEMLIMIT: os.Getenv("GOMEMLIMIT")}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			s.LoadAverage, _ = strconv.ParseFloat(f[0], 64)
		}
	}
	return s
}

// readPostgres reads the server's settings; serverURL, when set, is the URL of the
// in-process server's pool, whose size it reports.
func (s *Settings) readPostgres(ctx context.Context, admin *pgxpool.Pool, serverURL string) {
	s.Database = "postgres"
	for _, q := range []struct {
		name string
		dst  *string
	}{
		{"server_version", &s.ServerVersion}, {"fsync", &s.Fsync},
		{"synchronous_commit", &s.SynchronousCommit}, {"autovacuum", &s.Autovacuum},
	} {
		if err := admin.QueryRow(ctx, "SHOW "+q.name).Scan(q.dst); err != nil {
			s.SettingsError = err.Error()
			return
		}
	}
	var tls bool
	if err := admin.QueryRow(ctx, sqlConnectionTLS).Scan(&tls); err != nil {
		s.SettingsError = err.Error()
		return
	}
	s.TLS = "off"
	if tls {
		s.TLS = "on"
	}
	if serverURL != "" {
		if pcfg, err := pgxpool.ParseConfig(serverURL); err == nil {
			s.PoolMaxConns = pcfg.MaxConns
		}
	}
}
