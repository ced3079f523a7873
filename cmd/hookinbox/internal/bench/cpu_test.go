package bench

import (
	"runtime"
	"testing"
	"time"
)

func TestBenchCPU_ReadsProcStat(t *testing.T) {
	t.Parallel()
	// A command name with a space and a parenthesis: the fields count from the last ')'.
	line := []byte("4242 (post gres) x) S 1 4242 4242 0 -1 4194560 120 0 0 0 700 300 25 5 20 0 1 0 100 0 0\n")
	if got, ok := statTicks(line, false); !ok || got != 1000 {
		t.Errorf("utime+stime = %d, %v; want 1000", got, ok)
	}
	if got, ok := statTicks(line, true); !ok || got != 1030 {
		t.Errorf("with the children's = %d, %v; want 1030", got, ok)
	}
	if _, ok := statTicks([]byte("4242 (short) S 1 2"), false); ok {
		t.Error("a truncated stat line was read")
	}

	stat := []byte("cpu  100 5 50 800 40 3 2 1 0 0\ncpu0 50 2 25 400 20 1 1 0 0 0\n")
	busy, total, ok := cpuLineTicks(stat)
	if !ok || busy != 161 || total != 1001 {
		t.Errorf("busy %d, total %d, %v; want 161 (user, nice, system, irq, softirq, steal) and 1001 (with idle and iowait)", busy, total, ok)
	}
	if _, _, ok := cpuLineTicks([]byte("intr 1 2 3\n")); ok {
		t.Error("a /proc/stat without its cpu line was read")
	}
}

func TestBenchCPU_PostgresOnThisMachineOnly(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]bool{
		"postgres://u@127.0.0.1:5432/db":          true,
		"postgres://u@localhost/db":               true,
		"postgres://u@[::1]:5432/db":              true,
		"postgres:///db?host=/var/run/postgresql": true,
		"postgres://u@db.example.com:5432/db":     false,
		"postgres://u@10.0.0.7/db":                false,
		"sqlite:/tmp/x.db":                        false,
		"":                                        false,
	} {
		if got := localPostgres(raw); got != want {
			t.Errorf("localPostgres(%q) = %v, want %v", raw, got, want)
		}
	}
}

func TestBenchCPU_MeasuresThisProcess(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("reads Linux's /proc")
	}
	start, ok := procTicks("/proc/self/stat", false)
	if !ok {
		t.Fatal("/proc/self/stat not read")
	}
	end := newCPUMeter("test", "").start("loop")
	// Spin until this process has spent three more ticks, by the meter's own source:
	// the report must count at least two of them (the first may have begun before).
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		if now, _ := procTicks("/proc/self/stat", false); now-start >= 3 {
			break
		}
	}
	r := end(1, 0)
	if r == nil {
		t.Fatal("no report on Linux")
	}
	if r.Process != "test" || r.Per != "loop" || r.PostgresUS != nil {
		t.Errorf("report %+v, want process test, per loop, no PostgreSQL", r)
	}
	if r.ProcessUS < float64(2*clockTick/time.Microsecond) {
		t.Errorf("process %.0f µs, want at least two ticks", r.ProcessUS)
	}
	if r.BusyPercent <= 0 || r.BusyPercent > 100 {
		t.Errorf("busy %.1f%%, want within (0, 100]", r.BusyPercent)
	}
	var none *cpuMeter
	if r := none.start("x")(1, 0); r != nil {
		t.Errorf("a nil meter reported %+v", r)
	}
}
