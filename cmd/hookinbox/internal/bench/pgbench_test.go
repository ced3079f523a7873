package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// bench/*.pgbench are the scripts bench runs; a change to the one must be made to the
// other.
func TestBench_PgbenchScriptsAreTheFilesInBench(t *testing.T) {
	t.Parallel()
	for mode, s := range pgbenchScripts {
		b, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "bench", s.file))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != s.text {
			t.Errorf("bench/%s differs from the script bench runs for --mode %s (cmd/hookinbox/internal/bench/pgbench_scripts.go)", s.file, mode)
		}
	}
}

func TestBench_Summaries(t *testing.T) {
	t.Parallel()
	var lat []time.Duration
	for i := 1; i <= 100; i++ {
		lat = append(lat, time.Duration(i)*time.Millisecond)
	}
	if got, want := *summarize(lat), (LatencySummary{P50: 50, P90: 90, P99: 99, Max: 100}); got != want {
		t.Errorf("summarize(1..100 ms) = %+v, want %+v", got, want)
	}
	if summarize(nil) != nil {
		t.Error("summarize(nil) is not nil")
	}

	var pr PgbenchReport
	parsePgbench(`number of transactions actually processed: 200/200
number of failed transactions: 0 (0.000%)
latency average = 1.163 ms
initial connection time = 3.1 ms
tps = 1720.456 (without initial connection time)
`, &pr)
	if pr.Transactions != 200 || pr.Failed != 0 || pr.TPS != 1720.5 {
		t.Errorf("parsed %+v", pr)
	}
	got, err := appendLatencies(nil, strings.NewReader("0 1 8406 0 1796104754 498824\n1 1 failed 0 1796104754 498842\n0 2 604 0 1796104754 499448\n"))
	if err != nil || len(got) != 2 || got[0] != 8406*time.Microsecond || got[1] != 604*time.Microsecond {
		t.Errorf("latencies %v, %v", got, err)
	}

	u, err := libpqURL("postgres://u:p@h:5432/db?sslmode=disable&pool_max_conns=20&search_path=x&application_name=a")
	if err != nil || u != "postgres://u:p@h:5432/db?application_name=a&sslmode=disable" {
		t.Errorf("libpqURL = %q, %v", u, err)
	}
}
