// Command chaos runs hookinbox's chaos harness (package internal/chaos) and exits 1
// when a check fails. scripts/chaos.sh builds the binary and runs it.
//
//	go run ./cmd/hookinbox/internal/chaos/cmd/chaos --hookinbox /tmp/hookinbox [--size large] [--modes sync,multi]
package main

import (
	"context"
	"debug/buildinfo"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/chaos"
)

// sizes are the presets of --size: default runs in CI; large is the run published in
// docs/RELIABILITY.md.
var sizes = map[string]struct {
	invoices                               int
	spread                                 time.Duration
	kills, restarts, pauses, pgStops       int
	latency, blackholes, resets, commitCut int
	lateClaims, lateResults                int
}{
	"default": {invoices: 400, spread: 36 * time.Second, kills: 24, restarts: 4, pauses: 4, pgStops: 4,
		latency: 4, blackholes: 4, resets: 8, commitCut: 8, lateClaims: 8, lateResults: 4},
	"large": {invoices: 3000, spread: 150 * time.Second, kills: 60, restarts: 10, pauses: 10, pgStops: 8,
		latency: 10, blackholes: 10, resets: 20, commitCut: 20, lateClaims: 20, lateResults: 10},
}

// brokenTags are the build tags of the broken variants that need a binary of their
// own (scripts/chaos.sh builds them), by --broken's value.
var brokenTags = map[string]string{
	"recheck": "hookinbox_broken_recheck",
	"lease":   "hookinbox_broken_lease",
}

func main() {
	os.Exit(run())
}

func run() int {
	var (
		bin      = flag.String("hookinbox", "", "the hookinbox binary to test (required; scripts/chaos.sh builds it)")
		size     = flag.String("size", "default", "preset sizes: default (CI) or large")
		modes    = flag.String("modes", strings.Join(chaos.ScenarioOrder, ","), "scenarios to run, comma-separated: "+strings.Join(chaos.ScenarioOrder, ", "))
		invoices = flag.Int("invoices", 0, "facts per mode (overrides --size)")
		spread   = flag.Duration("spread", 0, "time the deliveries of a mode are spread over (overrides --size)")
		kills    = flag.Int("kills", -1, "SIGKILLs per mode (overrides --size)")
		restarts = flag.Int("restarts", -1, "graceful restarts (SIGTERM, as a deploy) per mode (overrides --size)")
		pauses   = flag.Int("pauses", -1, "SIGSTOPs past the leases per mode, then SIGCONT (overrides --size)")
		pgStops  = flag.Int("pg-stops", -1, "immediate stops of PostgreSQL per mode (overrides --size)")
		latency  = flag.Int("latency", -1, "latency spikes per mode, alternately on a server's link to PostgreSQL and on the sink's (overrides --size)")
		holes    = flag.Int("blackholes", -1, "blackholes past the leases per mode, alternately on a server's link to PostgreSQL and on the sink's (overrides --size)")
		resets   = flag.Int("resets", -1, "connection resets per mode, alternately on a server's link to PostgreSQL and on the sink's (overrides --size)")
		cuts     = flag.Int("commit-cuts", -1, "COMMIT answers cut per mode, alternately of a receiving transaction and of any (overrides --size)")
		late     = flag.Int("late-claims", -1, "claims per mode whose answer is held past the lease, making their holder a zombie (overrides --size)")
		results  = flag.Int("late-results", -1, "statements per mode that record an outbox delivery's result held on their way past the lease (overrides --size)")
		senders  = flag.Int("senders", 16, "concurrent senders")
		failRate = flag.Float64("fail-rate", 0.05, "share of handler calls that fail")
		slowRate = flag.Float64("slow-rate", 0.01, "share of handler calls that are slow (past the workers' lease when they have several statements)")
		second   = flag.Float64("second-objects", 0.2, "share of events also sent as a second Event object with another id")
		drain    = flag.Duration("drain", 2*time.Minute, "longest wait for the workers and dispatchers after the last acknowledgement")
		seed     = flag.Uint64("seed", 0, "seed of the workload and the fault schedule (0: from the clock)")
		portBase = flag.Int("port-base", 15630, "first of 20 ports: PostgreSQL on +1, the sink on +2, servers from +3")
		dir      = flag.String("dir", "", "working directory (default: a new temporary one, removed after a passing run)")
		fsync    = flag.Bool("fsync", true, "PostgreSQL's fsync")
		broken   = flag.String("broken", "", "run a deliberately broken setup that the checks must catch, and pass only if they do: async-commit (synchronous_commit=off, the WAL writer held for a second before each immediate stop: the commits acknowledged in it are lost; the lost check must count), recheck (a binary built with -tags hookinbox_broken_recheck: workers skip the re-check after their lock) or lease (-tags hookinbox_broken_lease: marks published without the fence); for those two the doubled checks must count")
	)
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "chaos: --hookinbox is required")
		return 2
	}
	preset, ok := sizes[*size]
	if !ok {
		fmt.Fprintf(os.Stderr, "chaos: unknown --size %q (default, large)\n", *size)
		return 2
	}
	o := &chaos.Options{
		Invoices: preset.invoices, Spread: preset.spread, Kills: preset.kills, Restarts: preset.restarts, Pauses: preset.pauses, PGStops: preset.pgStops,
		NetLatency: preset.latency, NetBlackholes: preset.blackholes, NetResets: preset.resets, CommitCuts: preset.commitCut, LateClaims: preset.lateClaims, LateResults: preset.lateResults,
		Senders: *senders, FailRate: *failRate, SlowRate: *slowRate, SinkFailRate: 0.02, SinkSlowRate: 0.01,
		SecondObjectShare: *second, Drain: *drain, Timing: chaos.DefaultTiming, Seed: *seed, Log: os.Stdout,
		SinkAddr: "127.0.0.1:" + strconv.Itoa(*portBase+2),
	}
	if *invoices > 0 {
		o.Invoices = *invoices
	}
	if *spread > 0 {
		o.Spread = *spread
	}
	if *kills >= 0 {
		o.Kills = *kills
	}
	if *restarts >= 0 {
		o.Restarts = *restarts
	}
	if *pauses >= 0 {
		o.Pauses = *pauses
	}
	if *pgStops >= 0 {
		o.PGStops = *pgStops
	}
	for _, f := range []struct {
		flag int
		to   *int
	}{{*latency, &o.NetLatency}, {*holes, &o.NetBlackholes}, {*resets, &o.NetResets}, {*cuts, &o.CommitCuts}, {*late, &o.LateClaims}, {*results, &o.LateResults}} {
		if f.flag >= 0 {
			*f.to = f.flag
		}
	}
	if o.Seed == 0 {
		o.Seed = uint64(time.Now().UnixNano())
	}
	for p := *portBase + 3; p < *portBase+20; p++ {
		o.ServerPorts = append(o.ServerPorts, p)
	}
	var err error
	if o.Bin, err = filepath.Abs(*bin); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 2
	}
	keep := *dir != ""
	if o.Dir = *dir; o.Dir == "" {
		if o.Dir, err = os.MkdirTemp("", "hookinbox-chaos-"); err != nil {
			fmt.Fprintln(os.Stderr, "chaos:", err)
			return 1
		}
	}
	var names []string
	for _, m := range strings.Split(*modes, ",") {
		m = strings.TrimSpace(m)
		if chaos.Scenarios[m] == nil {
			fmt.Fprintf(os.Stderr, "chaos: unknown mode %q (%s)\n", m, strings.Join(chaos.ScenarioOrder, ", "))
			return 2
		}
		names = append(names, m)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	pg := &chaos.Postgres{
		Dir:      filepath.Join(os.TempDir(), fmt.Sprintf("hookinbox-chaos-pg-%d", *portBase+1)),
		Port:     *portBase + 1,
		Settings: []string{"max_connections=300", "fsync=" + onOff(*fsync), "autovacuum=on"},
	}
	// The binary must be what the run claims to test: a broken variant's own build,
	// or one without any broken tag.
	tags, err := buildTags(o.Bin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 2
	}
	if want := brokenTags[*broken]; (want == "" && strings.Contains(tags, "hookinbox_broken_")) || (want != "" && !strings.Contains(tags, want)) {
		fmt.Fprintf(os.Stderr, "chaos: %s was built with tags %q, which is not what --broken %q needs (%q)\n", o.Bin, tags, *broken, want)
		return 2
	}
	switch *broken {
	case "":
		pg.Settings = append(pg.Settings, "synchronous_commit=on")
	case "async-commit":
		// A commit is acknowledged before its WAL is written; an immediate stop loses
		// what the WAL writer has not written: the last, partial WAL page (written every
		// wal_writer_delay; completed pages within milliseconds), a few commits or none
		// between two bursts. Held for a second before each stop, it leaves every commit
		// of that second unwritten.
		pg.Settings = append(pg.Settings, "synchronous_commit=off", "wal_writer_delay=10s")
		pg.HoldWALWriter = time.Second
	case "recheck", "lease":
		pg.Settings = append(pg.Settings, "synchronous_commit=on")
	default:
		fmt.Fprintf(os.Stderr, "chaos: unknown --broken %q (async-commit, recheck, lease)\n", *broken)
		return 2
	}
	o.Postgres = pg
	if err := pg.Init(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 1
	}
	if err := pg.Start(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 1
	}
	defer func() { _ = pg.Stop(context.Background()); _ = os.RemoveAll(pg.Dir) }()
	desc, err := pg.Describe(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 1
	}
	fmt.Printf("chaos: %s; %s\nchaos: %s, %d CPUs, Go %s, seed %d, work in %s\n", o.Bin, desc, hostname(), runtime.NumCPU(), runtime.Version(), o.Seed, o.Dir)

	var reports []*chaos.Report
	failed := false
	for _, name := range names {
		rep, err := chaos.Run(ctx, chaos.Scenarios[name], o)
		if err != nil {
			fmt.Fprintf(os.Stderr, "chaos: %s: %v\n", name, err)
			return 1
		}
		reports = append(reports, rep)
		failed = failed || rep.Findings.Failed()
	}
	fmt.Println()
	chaos.PrintTable(os.Stdout, reports)
	if *broken != "" {
		// Each variant must be caught by the check of what it breaks: the commit lost,
		// or the fence that keeps work from being done twice.
		checks, what := []string{chaos.CheckLost}, "lost"
		if *broken != "async-commit" {
			checks, what = chaos.Doubled, "done twice"
		}
		caught := 0
		for _, r := range reports {
			for _, c := range checks {
				caught += r.Findings.Count(c)
			}
		}
		if caught == 0 {
			fmt.Printf("chaos: FAILED: the broken variant %s was not caught: nothing counted as %s\n", *broken, what)
			return 1
		}
		fmt.Printf("chaos: the broken variant %s was caught: %d counted as %s\n", *broken, caught, what)
		_ = os.RemoveAll(o.Dir)
		return 0
	}
	if failed {
		fmt.Printf("chaos: FAILED (the servers' logs are in %s)\n", o.Dir)
		return 1
	}
	fmt.Println("chaos: every check is 0")
	if !keep {
		_ = os.RemoveAll(o.Dir)
	}
	return 0
}

// buildTags returns the -tags the binary was built with ("" for none).
func buildTags(bin string) (string, error) {
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return "", fmt.Errorf("reading the build information of %s: %w", bin, err)
	}
	for _, s := range info.Settings {
		if s.Key == "-tags" {
			return s.Value, nil
		}
	}
	return "", nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func hostname() string {
	h, _ := os.Hostname()
	return h
}
