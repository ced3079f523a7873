package bench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// The text report prints every anchor and every ratio a run has, each on a labelled
// line, and --json carries them under their names. Whatever the figures.
func TestReport_PrintsEveryAnchorAndRatio(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		report Report
		lines  []string // each a prefix of some line
		keys   []string // top-level JSON keys
	}{
		{
			name: "sync with both anchors",
			report: Report{Mode: ModeSync, Rate: 300, RateUnit: "req/s",
				Pgbench: &PgbenchReport{Script: "bench/sync.pgbench", TPS: 400, Transactions: 10},
				Naive: &NaiveReport{Script: "bench/sync.pgbench", PoolMaxConns: 8,
					LoadReport: LoadReport{Requests: 10, Outcomes: map[string]int64{"200": 10}, RequestRate: 200},
					After:      &DBCounts{Receipts: 10}}},
			lines: []string{"pgbench    400.0 tps", "ratio      0.750 (hookinbox 300.0 req/s / pgbench", "naive      200.0 req/s",
				"           left 10 receipts", "ratio      1.500 (hookinbox 300.0 req/s / naive receiver 200.0 req/s"},
			keys: []string{"pgbench", "naive", "ratio", "ratio_naive"},
		},
		{
			name:   "an anchor not run says why",
			report: Report{Mode: ModeAccept, Naive: &NaiveReport{Skipped: "the database is SQLite"}},
			lines:  []string{"naive      not run: the database is SQLite"},
			keys:   []string{"naive"},
		},
		{
			name: "forward",
			report: Report{Mode: ModeForward, Rate: 90, Forward: &ForwardReport{Sink: "an HTTP sink", Accepted: 10, Delivered: 10,
				Rate: 90, AcceptRate: 100, Ratio: new(0.9)}},
			lines: []string{"forward    10 of 10 accepted events delivered to an HTTP sink",
				"ratio      0.900 (delivered 90.0 events/s / accepted 100.0 events/s"},
			keys: []string{"forward"},
		},
		{
			name: "mixed",
			report: Report{Mode: ModeMixed, Mixed: &MixedReport{Workers: 4, Accepted: 10, AcceptRate: 100, ProcessedWhileAccepting: 8,
				ProcessedRate: 80, BacklogAtEnd: 2, Sync: &LoadReport{Requests: 10, Outcomes: map[string]int64{"processed": 10}, RequestRate: 160},
				Ratio: new(0.5)}},
			lines: []string{"mixed      10 accepted, 100.0/s, by the async billing endpoint while 4 workers processed 8: 80.0 events/s",
				"           2 left at the last answer", "sync       10 requests", "ratio      0.500 (processed while accepting 80.0 events/s / sync 160.0 req/s",
				"pgbench    no anchor for --mode mixed"},
			keys: []string{"mixed"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := tt.report
			r.finish()
			var text bytes.Buffer
			r.writeText(&text)
			for _, want := range tt.lines {
				found := false
				for line := range strings.Lines(text.String()) {
					found = found || strings.HasPrefix(line, want)
				}
				if !found {
					t.Errorf("no line starts with %q:\n%s", want, text.String())
				}
			}
			var js bytes.Buffer
			if err := r.writeJSON(&js); err != nil {
				t.Fatal(err)
			}
			var keys map[string]json.RawMessage
			if err := json.Unmarshal(js.Bytes(), &keys); err != nil {
				t.Fatal(err)
			}
			for _, k := range tt.keys {
				if _, ok := keys[k]; !ok {
					t.Errorf("--json has no %q:\n%s", k, js.String())
				}
			}
		})
	}
}
