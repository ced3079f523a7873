package bench

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// cpuMeter measures where a run's CPU time went: this process's (the load generator
// and the in-process server), PostgreSQL's processes' when the server is on this
// machine, and how busy the machine's cores were. It reads Linux's /proc; elsewhere
// it measures nothing and the report has no cpu line.
//
// Why: on a machine whose cores the load generator, hookinbox and PostgreSQL share,
// a rate alone does not say what limits it. The CPU time per request of each side,
// beside pgbench's per transaction, does: it is the cost that a faster machine
// divides, and the idle share is what waiting (round trips, fsync) leaves unused.
type cpuMeter struct {
	// process names what this process (or the child, see start) is, for the report.
	process string
	// postgres says the database server runs on this machine, so that its
	// processes' time is the run's.
	postgres bool
}

// newCPUMeter returns a meter of process for a run on the database at raw (empty or
// sqlite: for no server process).
func newCPUMeter(process, raw string) *cpuMeter {
	return &cpuMeter{process: process, postgres: localPostgres(raw)}
}

// localPostgres says whether the PostgreSQL URL raw names a server on this machine:
// a Unix socket or a loopback address.
func localPostgres(raw string) bool {
	if raw == "" || strings.HasPrefix(raw, "sqlite:") {
		return false
	}
	cfg, err := pgconn.ParseConfig(raw)
	if err != nil {
		return false
	}
	if strings.HasPrefix(cfg.Host, "/") || cfg.Host == "localhost" {
		return true
	}
	ip := net.ParseIP(cfg.Host)
	return ip != nil && ip.IsLoopback()
}

// cpuSample is CPU time spent so far, in clock ticks (Linux's USER_HZ).
type cpuSample struct {
	self, postgres, busy, total int64
	ok                          bool
}

// clockTick is Linux's USER_HZ, the unit of /proc's CPU times: 100 on every
// architecture Go supports (sysconf(_SC_CLK_TCK) would say so; Go has no sysconf).
const clockTick = 10 * time.Millisecond

func (m *cpuMeter) sample() cpuSample {
	var s cpuSample
	self, ok := procTicks("/proc/self/stat", false)
	if !ok {
		return s
	}
	s.self = self
	if s.busy, s.total, ok = machineTicks(); !ok {
		return s
	}
	if m.postgres {
		s.postgres = postgresTicks()
	}
	s.ok = true
	return s
}

// start begins a measurement; the function it returns ends it, for n units of work
// (requests, receipts, events), and returns nil when nothing could be read. child,
// when positive, is the CPU time of the child process that did the work (pgbench),
// reported instead of this process's.
func (m *cpuMeter) start(per string) func(n int64, child time.Duration) *CPUReport {
	if m == nil {
		return func(int64, time.Duration) *CPUReport { return nil }
	}
	before := m.sample()
	return func(n int64, child time.Duration) *CPUReport {
		after := m.sample()
		if !before.ok || !after.ok || n <= 0 {
			return nil
		}
		busy := 0.0
		if after.total > before.total {
			busy = round1(100 * float64(after.busy-before.busy) / float64(after.total-before.total))
		}
		us := func(ticks int64) float64 {
			return round1(float64(time.Duration(ticks)*clockTick) / float64(time.Microsecond) / float64(n))
		}
		r := &CPUReport{
			Process: m.process, Per: per,
			ProcessUS:   us(after.self - before.self),
			BusyPercent: busy,
		}
		if child > 0 {
			r.ProcessUS = round1(float64(child) / float64(time.Microsecond) / float64(n))
		}
		if m.postgres {
			pg := us(max(after.postgres-before.postgres, 0))
			r.PostgresUS = &pg
		}
		return r
	}
}

// String prints the report as bench's cpu line.
func (r *CPUReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %.1f µs", r.Process, r.ProcessUS)
	if r.PostgresUS != nil {
		fmt.Fprintf(&b, ", PostgreSQL %.1f µs", *r.PostgresUS)
	}
	fmt.Fprintf(&b, " per %s; the cores %.0f%% busy", r.Per, r.BusyPercent)
	return b.String()
}

// CPUReport is a phase's CPU time per unit of work, in microseconds, and the share
// of the machine's cores that were busy meanwhile.
type CPUReport struct {
	// Process names what ProcessUS measured: bench's process (the load generator,
	// and the in-process server when there is one), or pgbench's.
	Process string `json:"process"`
	// Per is the unit of work: request, receipt, event or transaction.
	Per       string  `json:"per"`
	ProcessUS float64 `json:"process_us"`
	// PostgresUS is every process named postgres on this machine: the server's
	// backends, its WAL writer and checkpointer. Absent when the server is elsewhere.
	PostgresUS  *float64 `json:"postgres_us,omitempty"`
	BusyPercent float64  `json:"busy_percent"`
}

// procTicks returns utime+stime of the /proc/PID/stat file at path, and with
// children also cutime+cstime: the time of its children that exited and were
// waited for.
func procTicks(path string, children bool) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	return statTicks(b, children)
}

// statTicks reads procTicks' fields from a /proc/PID/stat line.
func statTicks(b []byte, children bool) (int64, bool) {
	// The command name, field 2, is in parentheses and may hold spaces: the fields
	// counted start after its closing parenthesis, at field 3 (state).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 15 {
		return 0, false
	}
	fields := f[11:13] // utime, stime: fields 14 and 15
	if children {
		fields = f[11:15] // and cutime, cstime
	}
	var sum int64
	for _, v := range fields {
		t, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, false
		}
		sum += t
	}
	return sum, true
}

// machineTicks returns the busy and total ticks of all cores from /proc/stat's cpu
// line: busy is user, nice, system, irq, softirq and steal; idle and iowait are not.
func machineTicks() (busy, total int64, ok bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	return cpuLineTicks(b)
}

// cpuLineTicks reads machineTicks' figures from /proc/stat's content.
func cpuLineTicks(b []byte) (busy, total int64, ok bool) {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, false
	}
	var v [8]int64
	for k := range v {
		var err error
		if v[k], err = strconv.ParseInt(f[k+1], 10, 64); err != nil {
			return 0, 0, false
		}
	}
	user, nice, system, idle, iowait, irq, softirq, steal := v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]
	busy = user + nice + system + irq + softirq + steal
	return busy, busy + idle + iowait, true
}

// postgresTicks sums the CPU time of the processes named postgres, their exited
// children's included: a backend that exits within the measurement (pgbench's, when
// pgbench ends) has its time added to the postmaster's children's once it is
// reaped, so the sum counts it once, before and after.
func postgresTicks() int64 {
	comms, _ := filepath.Glob("/proc/[0-9]*/comm")
	var sum int64
	for _, c := range comms {
		name, err := os.ReadFile(c)
		if err != nil || string(bytes.TrimSpace(name)) != "postgres" {
			continue
		}
		if t, ok := procTicks(filepath.Join(filepath.Dir(c), "stat"), true); ok {
			sum += t
		}
	}
	return sum
}
