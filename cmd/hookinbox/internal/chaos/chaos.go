package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// startProcs starts the scenario's serve processes, each on its own port and with its
// own link to PostgreSQL (a Proxy, so that a network fault can cut one process off
// while the others go on), and returns them, their links, and the addresses of those
// that receive.
func startProcs(s *Scenario, o *Options, dir string, cfg func(dbURL string) string, env []string, dbName string) (procs []*Proc, links []*Proxy, receivers []string, err error) {
	defer func() {
		if err != nil {
			for _, l := range links {
				l.Close()
			}
		}
	}()
	port := 0
	for _, g := range s.Procs {
		for n := range g.Count {
			if port >= len(o.ServerPorts) {
				return nil, links, nil, fmt.Errorf("scenario %s needs more than %d server ports", s.Name, len(o.ServerPorts))
			}
			addr := "127.0.0.1:" + strconv.Itoa(o.ServerPorts[port])
			port++
			// A server left over from an earlier run would answer in its place.
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return nil, links, nil, fmt.Errorf("port of %s: %w", s.Name, err)
			}
			ln.Close()
			name := "serve"
			args := []string{"--listen", addr, "--log-level", "warn"}
			if g.Roles != "" {
				name = fmt.Sprintf("%s-%d", g.Roles, n+1)
				args = append(args, "--role", g.Roles)
			}
			link := &Proxy{Name: "db:" + name, Target: o.Postgres.Addr(), PG: true, LateHold: o.Timing.pastLeases()}
			if err := link.Start(); err != nil {
				return nil, links, nil, err
			}
			links = append(links, link)
			cfgPath := filepath.Join(dir, name+".yaml")
			if err := os.WriteFile(cfgPath, []byte(cfg(o.Postgres.URLVia(link.Addr(), dbName))), 0o644); err != nil {
				return nil, links, nil, err
			}
			log, err := os.Create(filepath.Join(dir, name+".log"))
			if err != nil {
				return nil, links, nil, err
			}
			p := &Proc{Name: name, Bin: o.Bin, Args: append([]string{"serve", "--config", cfgPath}, args...), Env: env, Addr: addr, Log: log, Receives: g.Receives(), Dispatches: g.Dispatches()}
			if err := p.Start(); err != nil {
				return nil, links, nil, err
			}
			procs = append(procs, p)
			if g.Receives() {
				receivers = append(receivers, addr)
			}
		}
	}
	return procs, links, receivers, nil
}

// waitReady waits until every process answers /readyz with 200.
func waitReady(ctx context.Context, procs []*Proc) error {
	deadline := time.Now().Add(60 * time.Second)
	for _, p := range procs {
		for {
			resp, err := http.Get("http://" + p.Addr + "/readyz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s did not become ready on %s (see %s)", p.Name, p.Addr, p.Log.Name())
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}

// schedule draws n moments in [from, to] of spread, in order.
func schedule(r *rand.Rand, n int, spread time.Duration, from, to float64) []time.Duration {
	at := make([]time.Duration, n)
	for i := range at {
		at[i] = time.Duration((from + (to-from)*r.Float64()) * float64(spread))
	}
	sort.Slice(at, func(i, j int) bool { return at[i] < at[j] })
	return at
}

// atEach calls f with each moment's index at that moment after it was called, one
// after the other (a moment that comes while f still runs is late), until ctx ends.
func atEach(ctx context.Context, at []time.Duration, f func(i int)) {
	start := time.Now()
	for i, t := range at {
		select {
		case <-time.After(time.Until(start.Add(t))):
			f(i)
		case <-ctx.Done():
			return
		}
	}
}

// failures collects the harness's own failures: a kill, restart or pause that did not
// happen as asked fails the run.
type failures struct {
	mu   sync.Mutex
	errs []string
}

func (f *failures) add(p *Proc, err error) {
	if err == nil {
		return
	}
	fmt.Fprintf(p.Log, "chaos: %v\n", err)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, err.Error())
}

func (f *failures) list() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.errs...)
}

// killServers SIGKILLs a random process at each moment and restarts it after up to
// half a second: whatever it was doing — a group commit, a claim, a delivery, a
// COMMIT whose answer was on the way — stops there. Its counters are read just
// before.
func killServers(ctx context.Context, procs []*Proc, at []time.Duration, r *rand.Rand, fails *failures, metrics *http.Client) {
	atEach(ctx, at, func(int) {
		p := procs[r.IntN(len(procs))]
		p.Scrape(ctx, metrics)
		fails.add(p, p.KillAndRestart(time.Duration(r.Int64N(int64(500*time.Millisecond)))))
	})
}

// restartServers restarts a random process gracefully (SIGTERM, then start) at each
// moment, as a deploy does.
func restartServers(ctx context.Context, procs []*Proc, at []time.Duration, r *rand.Rand, fails *failures, metrics *http.Client) {
	atEach(ctx, at, func(int) {
		p := procs[r.IntN(len(procs))]
		p.Scrape(ctx, metrics)
		fails.add(p, p.TerminateAndRestart(15*time.Second))
	})
}

// pauseServers SIGSTOPs a random process at each moment for d, past every lease.
func pauseServers(ctx context.Context, procs []*Proc, at []time.Duration, d time.Duration, r *rand.Rand, fails *failures) {
	atEach(ctx, at, func(int) {
		p := procs[r.IntN(len(procs))]
		fails.add(p, p.Pause(d))
	})
}

// stopPostgres stops PostgreSQL in immediate mode at each moment — every connection
// drops, nothing is flushed, the next start runs crash recovery — and starts it again
// after half a second to two seconds. With Postgres.HoldWALWriter the WAL writer is
// held for that long first (the async-commit broken variant).
//
// The fault counters are sequences, which PostgreSQL logs ahead of use: after a crash
// they jump by up to 32. They are read before the stop and set back after the start
// (the faults injected in between, a few milliseconds, go uncounted).
func stopPostgres(ctx context.Context, pg *Postgres, pool *pgxpool.Pool, at []time.Duration, r *rand.Rand) (int, error) {
	stops := 0
	var err error
	atEach(ctx, at, func(int) {
		if err != nil {
			return
		}
		if err = pg.HoldWAL(ctx); err != nil {
			return
		}
		var counters []int64
		if counters, err = readCounters(ctx, pool); err != nil {
			return
		}
		if err = pg.StopImmediate(ctx); err != nil {
			return
		}
		stops++
		time.Sleep(500*time.Millisecond + time.Duration(r.Int64N(int64(1500*time.Millisecond))))
		if err = pg.Start(context.WithoutCancel(ctx)); err != nil {
			return
		}
		err = resetCounters(context.WithoutCancel(ctx), pool, counters)
	})
	return stops, err
}

// counters are the sequences that count what faults.sql injected.
var counters = []string{"chaos_handler_calls", "chaos_injected_failures", "chaos_injected_slow"}

func readCounters(ctx context.Context, pool *pgxpool.Pool) ([]int64, error) {
	values := make([]int64, len(counters))
	for n, seq := range counters {
		if err := pool.QueryRow(ctx, `SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM `+seq).Scan(&values[n]); err != nil {
			return nil, fmt.Errorf("error reading %s: %w", seq, err)
		}
	}
	return values, nil
}

func resetCounters(ctx context.Context, pool *pgxpool.Pool, values []int64) error {
	// The pool's connections died with the server; the first statements may fail.
	deadline := time.Now().Add(30 * time.Second)
	for n, seq := range counters {
		for {
			_, err := pool.Exec(ctx, `SELECT setval($1, greatest($2, 1), $2 > 0)`, seq, values[n])
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("error resetting %s: %w", seq, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

// drain waits until no receipt and no outbox message is pending, or the deadline.
func drain(ctx context.Context, pool *pgxpool.Pool, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		var pending int
		err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM hookinbox_inbox WHERE state = 'pending')
		                                + (SELECT count(*) FROM hookinbox_outbox WHERE state = 'pending')`).Scan(&pending)
		if err == nil && pending == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("still %d pending after %s (err %v)", pending, limit, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func ownExits(procs []*Proc) int {
	n := 0
	for _, p := range procs {
		n += p.Counts().OwnExits
	}
	return n
}

func parseDuration(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		panic(fmt.Sprintf("chaos: bad duration %q", s))
	}
	return d
}

// command runs the binary to completion and returns its output.
func command(ctx context.Context, bin string, env []string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
