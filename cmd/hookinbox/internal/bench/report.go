package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// Report is everything a run measured, printed as text or, with --json, as one
// JSON object.
type Report struct {
	Mode   string `json:"mode"`
	Target string `json:"target"` // "in-process" or the --url
	// Database is the database as given, without its password; Schema the run's.
	Database        string  `json:"database,omitempty"`
	Schema          string  `json:"schema,omitempty"`
	SchemaKept      bool    `json:"schema_kept,omitempty"`
	Concurrency     int     `json:"concurrency"`
	Count           int     `json:"count,omitempty"`
	DurationSeconds float64 `json:"duration_seconds,omitempty"`
	Duplicates      float64 `json:"duplicates_fraction,omitempty"`

	// LoadReport is the sending phase (drain: the backlog's; mixed: the async
	// endpoint's).
	LoadReport

	// Rate is the mode's figure: 2xx answers per second for sync and accept, events
	// processed (drain; mixed: while accepting) or delivered (forward) per second.
	Rate     float64 `json:"rate"`
	RateUnit string  `json:"rate_unit"`

	Drain    *DrainReport    `json:"drain,omitempty"`
	Forward  *ForwardReport  `json:"forward,omitempty"`
	Dispatch *DispatchReport `json:"dispatch,omitempty"`
	Mixed    *MixedReport    `json:"mixed,omitempty"`
	Pgbench  *PgbenchReport  `json:"pgbench,omitempty"`
	// Naive is the hand-written receiver's run on the same load (--anchor naive).
	Naive *NaiveReport `json:"naive,omitempty"`
	// Groups are the in-process server's group commits, by kind (accept, sync).
	Groups []GroupReport `json:"groups,omitempty"`
	// Ratio is Rate / Pgbench.TPS: the share of the database's own limit for the same
	// SQL that hookinbox reached.
	Ratio *float64 `json:"ratio,omitempty"`
	// RatioNaive is Rate / Naive.RequestRate: how much faster hookinbox is than the
	// receiver a team would write by hand.
	RatioNaive *float64 `json:"ratio_naive,omitempty"`

	Settings Settings `json:"settings"`
	// After counts the rows in the run's database once it is over.
	After *DBCounts `json:"database_after,omitempty"`

	// Notes say what to keep in mind reading the figures: why there is no ratio,
	// answers another mode gives.
	Notes []string `json:"notes,omitempty"`

	Interrupted bool   `json:"interrupted,omitempty"`
	Incomplete  string `json:"incomplete,omitempty"`
}

// LoadReport is what a closed-loop run measured, hookinbox's or an anchor's.
type LoadReport struct {
	Requests       int64            `json:"requests"`
	DuplicatesSent int64            `json:"duplicates_sent"`
	Outcomes       map[string]int64 `json:"outcomes"`
	Errors         map[string]int64 `json:"errors"`
	ErrorCount     int64            `json:"error_count"`
	FirstError     string           `json:"first_error,omitempty"`
	ElapsedSeconds float64          `json:"elapsed_seconds"`
	// RequestRate is the 2xx answers per second.
	RequestRate float64         `json:"request_rate"`
	Latency     *LatencySummary `json:"latency_ms,omitempty"`
	// CPU is the run's CPU time per request (Linux, see cpuMeter).
	CPU *CPUReport `json:"cpu,omitempty"`
}

// DrainReport is drain's figures from the workers' start.
type DrainReport struct {
	Backlog        int64        `json:"backlog"`
	BacklogVia     string       `json:"backlog_via"`
	Workers        int          `json:"workers"`
	Processed      int64        `json:"processed"`
	FailedAttempts int64        `json:"failed_attempts"`
	ElapsedSeconds float64      `json:"elapsed_seconds"`
	Rate           float64      `json:"rate"`
	Tenths         []DrainTenth `json:"tenths"`
	// CPU is the workers' CPU time per event processed (Linux, see cpuMeter).
	CPU *CPUReport `json:"cpu,omitempty"`
}

// DrainTenth is one tenth of the backlog.
type DrainTenth struct {
	FromPercent int     `json:"from_percent"`
	ToPercent   int     `json:"to_percent"`
	Events      int64   `json:"events"`
	Seconds     float64 `json:"seconds"`
	Rate        float64 `json:"rate"`
}

// ForwardReport is forward's deliveries.
type ForwardReport struct {
	// Sink says where the events were forwarded; Stream names the JetStream stream
	// of --sink nats, deleted after the run.
	Sink         string `json:"sink"`
	Stream       string `json:"stream,omitempty"`
	Accepted     int64  `json:"accepted"`
	Delivered    int64  `json:"delivered"`
	Redeliveries int64  `json:"redeliveries"`
	// ElapsedSeconds runs from the first request to the last event's first delivery.
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	Rate           float64 `json:"rate"`
	// AcceptRate is the accepted answers per second of the sending phase, and Ratio
	// Rate / AcceptRate: the share of the arrival rate that the outbox delivers.
	AcceptRate float64  `json:"accept_rate"`
	Ratio      *float64 `json:"ratio,omitempty"`
	// EndToEnd is each event's latency from its request's start to its delivery.
	EndToEnd *LatencySummary `json:"end_to_end_ms,omitempty"`
}

// setLoad records a closed-loop run.
func (r *LoadReport) setLoad(res *loadResult) {
	r.Requests, r.DuplicatesSent = res.Requests, res.Duplicates
	r.Outcomes, r.Errors = res.Outcomes, res.Errors
	r.ErrorCount, r.FirstError = res.errorCount(), res.FirstError
	r.ElapsedSeconds = round3(res.Elapsed.Seconds())
	if res.Elapsed > 0 {
		r.RequestRate = round1(float64(res.ok()) / res.Elapsed.Seconds())
	}
	r.Latency = summarize(res.Latencies)
	r.CPU = res.CPU
}

func (r *Report) setRate(rate float64, unit string) { r.Rate, r.RateUnit = rate, unit }

// expectedOutcome is the answer to a new event in the modes that compare with pgbench.
var expectedOutcome = map[string]string{ModeSync: "processed", ModeAccept: "accepted", ModeMixed: "accepted"}

// expectedEndpoint is the endpoint that gives expectedOutcome.
var expectedEndpoint = map[string]string{ModeSync: "sync with the billing handler", ModeAccept: "async", ModeMixed: "async with the billing handler"}

// finish computes the ratio, and notes what it does not compare.
func (r *Report) finish() {
	if r.Outcomes == nil {
		r.Outcomes = map[string]int64{}
	}
	if r.Errors == nil {
		r.Errors = map[string]int64{}
	}
	if want, ok := expectedOutcome[r.Mode]; ok {
		for outcome, n := range r.Outcomes {
			if outcome != want && outcome != "duplicate" {
				r.Notes = append(r.Notes, fmt.Sprintf("--mode %s expects %s answers, but %d were %s: is the endpoint %s?", r.Mode, want, n, outcome, expectedEndpoint[r.Mode]))
			}
		}
		slices.Sort(r.Notes)
	}
	r.ratioNaive()
	if r.Pgbench == nil || r.Pgbench.TPS <= 0 || r.Rate <= 0 || r.Interrupted {
		return
	}
	if r.DuplicatesSent > 0 {
		r.Notes = append(r.Notes, "no ratio: --duplicates sends answers that write nothing, and pgbench's transactions are all new events")
		return
	}
	ratio := round3(r.Rate / r.Pgbench.TPS)
	r.Ratio = &ratio
}

// ratioNaive sets RatioNaive. The naive receiver answers duplicates as hookinbox
// does, without writing, so --duplicates leaves the ratio meaningful.
func (r *Report) ratioNaive() {
	if r.Naive == nil || r.Naive.RequestRate <= 0 || r.Rate <= 0 || r.Interrupted {
		return
	}
	ratio := round3(r.Rate / r.Naive.RequestRate)
	r.RatioNaive = &ratio
}

// failure is the run's error for the exit code: nil when everything was answered
// 2xx and, for drain, forward and mixed, processed or delivered.
func (r *Report) failure() error {
	var problems []string
	if r.ErrorCount > 0 {
		problems = append(problems, fmt.Sprintf("%d of %d requests were not answered 2xx", r.ErrorCount, r.Requests))
	}
	if m := r.Mixed; m != nil && m.Sync != nil && m.Sync.ErrorCount > 0 {
		problems = append(problems, fmt.Sprintf("%d of %d requests to the sync endpoint were not answered 2xx", m.Sync.ErrorCount, m.Sync.Requests))
	}
	if r.Incomplete != "" {
		problems = append(problems, r.Incomplete)
	}
	if r.Interrupted {
		problems = append(problems, "interrupted")
	}
	if len(problems) == 0 {
		return nil
	}
	return errors.New(strings.Join(problems, "; "))
}

func (r *Report) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// GroupReport sums the group commits of one kind (hookinbox.GroupInfo).
type GroupReport struct {
	Kind     string  `json:"kind"`
	Commits  int64   `json:"commits"`
	MeanSize float64 `json:"mean_size"`
	Failed   int64   `json:"failed,omitempty"`
}

func round1(x float64) float64 { return math.Round(x*10) / 10 }
func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
