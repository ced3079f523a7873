package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Postgres is a private, throw-away PostgreSQL server that the harness may stop in
// immediate mode: the machine's shared server is never touched.
type Postgres struct {
	// Dir holds the data directory, the socket and the log; it is removed first.
	Dir  string
	Port int
	// Settings are extra "-c name=value" settings.
	Settings []string
	// HoldWALWriter, when set, holds the WAL writer (SIGSTOP) for this long before each
	// immediate stop and then kills it with the server. Under synchronous_commit=off
	// the commits acknowledged in that time are then all still in PostgreSQL's WAL
	// buffers when it stops, as a power loss finds the commits whose WAL the OS had not
	// yet written. Without it an immediate stop loses only what the WAL writer has not
	// written yet: the completed WAL pages it is woken for within milliseconds, and the
	// last, partial page it writes every wal_writer_delay; a stop between two bursts of
	// traffic may find nothing there.
	HoldWALWriter time.Duration

	bindir        string
	heldWALWriter int // the pid HoldWAL stopped, killed by the next StopImmediate
	// as runs initdb and postgres as the postgres user when the harness is root: both
	// refuse to run as root.
	as []string
}

// Init creates the cluster.
func (p *Postgres) Init(ctx context.Context) error {
	bindirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(bindirs, func(i, j int) bool { return pgVersion(bindirs[i]) < pgVersion(bindirs[j]) })
	for _, d := range bindirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			p.bindir = d
		}
	}
	if p.bindir == "" {
		if path, err := exec.LookPath("initdb"); err == nil {
			p.bindir = filepath.Dir(path)
		} else {
			return fmt.Errorf("no PostgreSQL server binaries (initdb) found: install them (Debian: apt-get install postgresql)")
		}
	}
	if err := os.RemoveAll(p.Dir); err != nil {
		return err
	}
	if err := os.MkdirAll(p.Dir, 0o755); err != nil {
		return err
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return fmt.Errorf("running as root needs a postgres user to run the server as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(p.Dir, uid, gid); err != nil {
			return err
		}
		p.as = []string{"runuser", "-u", "postgres", "--"}
	}
	return p.run(ctx, "initdb", "-D", p.data(), "-U", "postgres", "--auth=trust", "--no-sync")
}

func pgVersion(bindir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(bindir)))
	return n
}

func (p *Postgres) data() string { return filepath.Join(p.Dir, "data") }

// Start starts the server and waits until it accepts connections (after crash
// recovery, following an immediate stop).
func (p *Postgres) Start(ctx context.Context) error {
	opts := fmt.Sprintf("-h 127.0.0.1 -p %d -k %s", p.Port, p.Dir)
	for _, s := range p.Settings {
		opts += " -c " + s
	}
	return p.run(ctx, "pg_ctl", "-D", p.data(), "-l", filepath.Join(p.Dir, "log"), "-w", "-t", "120", "-o", opts, "start")
}

// StopImmediate stops the server the way a crash does: every backend exits at once,
// nothing is flushed or checkpointed, and the next start runs crash recovery.
func (p *Postgres) StopImmediate(ctx context.Context) error {
	if p.heldWALWriter == 0 {
		return p.run(ctx, "pg_ctl", "-D", p.data(), "-m", "immediate", "-w", "stop")
	}
	// The postmaster is told first, so that the WAL writer's death is part of its
	// shutdown, not a crash it would restart from; the held WAL writer cannot answer
	// its SIGQUIT, so it is killed, and the postmaster then exits.
	pid := p.heldWALWriter
	p.heldWALWriter = 0
	if err := p.run(ctx, "pg_ctl", "-D", p.data(), "-m", "immediate", "-W", "stop"); err != nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("error killing the WAL writer (pid %d): %w", pid, err)
	}
	pidFile := filepath.Join(p.data(), "postmaster.pid")
	for deadline := time.Now().Add(time.Minute); ; {
		if _, err := os.Stat(pidFile); errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("PostgreSQL still running a minute after its immediate stop (%s)", pidFile)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// HoldWAL stops the WAL writer (SIGSTOP) for Postgres.HoldWALWriter, before an
// immediate stop; it does nothing when that is zero. StopImmediate then kills it
// with the server, the WAL buffers unwritten.
func (p *Postgres) HoldWAL(ctx context.Context) error {
	if p.HoldWALWriter <= 0 {
		return nil
	}
	pid, err := p.walWriter(ctx)
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("error holding the WAL writer (pid %d): %w", pid, err)
	}
	p.heldWALWriter = pid
	time.Sleep(p.HoldWALWriter)
	return nil
}

// walWriter returns the WAL writer's pid. Just after a start (crash recovery) the
// server may not accept connections or list its WAL writer yet: it is asked again
// for up to 30 seconds.
func (p *Postgres) walWriter(ctx context.Context) (int, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		pid, err := func() (int, error) {
			conn, err := pgx.Connect(ctx, p.URL("postgres"))
			if err != nil {
				return 0, err
			}
			defer conn.Close(ctx)
			var pid int
			err = conn.QueryRow(ctx, `SELECT pid FROM pg_stat_activity WHERE backend_type = 'walwriter'`).Scan(&pid)
			return pid, err
		}()
		if err == nil {
			return pid, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return 0, fmt.Errorf("error finding the WAL writer: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop stops the server cleanly.
func (p *Postgres) Stop(ctx context.Context) error {
	if p.heldWALWriter != 0 { // a run that failed between HoldWAL and its stop
		_ = syscall.Kill(p.heldWALWriter, syscall.SIGCONT)
		p.heldWALWriter = 0
	}
	return p.run(ctx, "pg_ctl", "-D", p.data(), "-m", "fast", "-w", "stop")
}

// URL is the URL of database db.
func (p *Postgres) URL(db string) string { return p.URLVia(p.Addr(), db) }

// Addr is the server's address.
func (p *Postgres) Addr() string { return fmt.Sprintf("127.0.0.1:%d", p.Port) }

// URLVia is the URL of database db through addr (a proxy to the server).
func (p *Postgres) URLVia(addr, db string) string {
	return fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", addr, db)
}

// CreateDatabase creates a fresh database.
func (p *Postgres) CreateDatabase(ctx context.Context, db string) error {
	conn, err := pgx.Connect(ctx, p.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{db}.Sanitize()); err != nil {
		return err
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{db}.Sanitize())
	return err
}

// Describe returns the server's version and the settings that matter to a crash.
func (p *Postgres) Describe(ctx context.Context) (string, error) {
	conn, err := pgx.Connect(ctx, p.URL("postgres"))
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	var parts []string
	for _, name := range []string{"server_version", "fsync", "synchronous_commit", "full_page_writes", "wal_writer_delay", "autovacuum", "shared_buffers", "max_connections"} {
		var v string
		if err := conn.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v); err != nil {
			return "", err
		}
		parts = append(parts, name+"="+v)
	}
	return "PostgreSQL " + strings.Join(parts, ", "), nil
}

func (p *Postgres) run(ctx context.Context, tool string, args ...string) error {
	argv := append(append([]string{}, p.as...), filepath.Join(p.bindir, tool))
	argv = append(argv, args...)
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w: %s", tool, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return nil
}
