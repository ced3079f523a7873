package probe

import (
	"encoding/json"
	"io"
	"maps"
	"time"
)

// Report is what a run found: per scenario, the receiver's answers and the facts it
// lost, doubled, or never acknowledged.
type Report struct {
	Target           string
	Provider         string
	TimeScale        float64
	FactsPerScenario int
	// AnswerTime is the median time to a 2xx of baseline's first attempts, which
	// retries and timeout aim their hang-ups at.
	AnswerTime time.Duration
	Scenarios  []*ScenarioReport
	// Lost, Doubled and Undelivered sum the scenarios'.
	Lost, Doubled, Undelivered int
	// Interrupted reports that the run was stopped before every delivery ended.
	Interrupted bool
}

// ScenarioReport is one scenario's result.
type ScenarioReport struct {
	Name  string
	About string
	// Skipped, when set, says why the scenario did not run.
	Skipped string

	Facts, Deliveries, Attempts int
	// Answers counts the attempts by Attempt.Outcome: "200", "500", "cut", ...
	Answers map[string]int
	// Lost counts facts whose outcome was acknowledged (2xx) but never applied.
	Lost int
	// Doubled counts facts applied more than once.
	Doubled int
	// Undelivered counts facts never applied whose outcome no attempt got a 2xx for:
	// the provider gave up, or was still retrying when the run ended.
	Undelivered int
	// GaveUp counts deliveries whose schedule ran out; StillRetrying those the
	// interrupted run left with retries to go.
	GaveUp, StillRetrying int
	// P50 and P99 are of the time to an answer, over every answered attempt.
	P50, P99 time.Duration
	// Took is how long the scenario took to send its first attempts.
	Took     time.Duration
	Failures []Failure
}

// Failure is a fact the receiver lost, doubled, or that was never delivered.
type Failure struct {
	Fact    *Fact
	Problem string // "lost", "doubled", "undelivered"
	Applied int64
}

// Passed reports whether the scenario ran and found nothing.
func (s *ScenarioReport) Passed() bool {
	return s.Skipped == "" && s.Lost == 0 && s.Doubled == 0 && s.Undelivered == 0
}

// Verdict is "pass", "FAIL" or "skipped".
func (s *ScenarioReport) Verdict() string {
	switch {
	case s.Skipped != "":
		return "skipped"
	case s.Passed():
		return "pass"
	default:
		return "FAIL"
	}
}

// Failed reports whether a fact was lost, doubled or not delivered.
func (r *Report) Failed() bool { return r.Lost+r.Doubled+r.Undelivered > 0 }

// outcomeAcked reports whether the provider saw the fact's outcome acknowledged: a
// 2xx for the outcome or for its second Event object.
func outcomeAcked(f *Fact) bool {
	for _, d := range f.Deliveries() {
		if d.Event.Role != RoleStep && d.Acked() {
			return true
		}
	}
	return false
}

// problem is what went wrong with f given its applied count, "" for nothing.
func problem(f *Fact, applied int64) string {
	switch {
	case applied > 1:
		return "doubled"
	case applied == 1:
		return ""
	case outcomeAcked(f):
		return "lost"
	default:
		return "undelivered"
	}
}

// scenarioReport sums the scenario's facts.
func scenarioReport(name string, facts []*Fact, applied map[string]int64) *ScenarioReport {
	s := &ScenarioReport{Name: name, About: scenarioAbout[name], Facts: len(facts), Answers: map[string]int{}}
	var took []time.Duration
	for _, f := range facts {
		for _, d := range f.Deliveries() {
			s.Deliveries++
			switch d.get() {
			case gaveUp:
				s.GaveUp++
			case stopped:
				s.StillRetrying++
			}
			for _, a := range d.Attempts() {
				s.Attempts++
				s.Answers[a.Outcome()]++
				if a.Status != 0 {
					took = append(took, a.Took)
				}
			}
		}
		p := problem(f, applied[f.ID])
		switch p {
		case "":
			continue
		case "lost":
			s.Lost++
		case "doubled":
			s.Doubled++
		case "undelivered":
			s.Undelivered++
		}
		s.Failures = append(s.Failures, Failure{Fact: f, Problem: p, Applied: applied[f.ID]})
	}
	s.P50, s.P99 = percentile(took, 50), percentile(took, 99)
	return s
}

// The JSON document of --json.
type (
	jsonReport struct {
		Target           string          `json:"target"`
		Provider         string          `json:"provider"`
		TimeScale        float64         `json:"time_scale"`
		FactsPerScenario int             `json:"facts_per_scenario"`
		AnswerTimeMS     float64         `json:"answer_time_ms"`
		Lost             int             `json:"lost"`
		Doubled          int             `json:"doubled"`
		Undelivered      int             `json:"undelivered"`
		Interrupted      bool            `json:"interrupted"`
		Passed           bool            `json:"passed"`
		Scenarios        []*jsonScenario `json:"scenarios"`
	}
	jsonScenario struct {
		Name          string         `json:"name"`
		About         string         `json:"about"`
		Verdict       string         `json:"verdict"`
		Skipped       string         `json:"skipped,omitempty"`
		Facts         int            `json:"facts"`
		Deliveries    int            `json:"deliveries"`
		Attempts      int            `json:"attempts"`
		Answers       map[string]int `json:"answers"`
		Lost          int            `json:"lost"`
		Doubled       int            `json:"doubled"`
		Undelivered   int            `json:"undelivered"`
		GaveUp        int            `json:"gave_up"`
		StillRetrying int            `json:"still_retrying"`
		P50MS         float64        `json:"p50_ms"`
		P99MS         float64        `json:"p99_ms"`
		Failures      []jsonFailure  `json:"failures"`
	}
	jsonFailure struct {
		FactID     string         `json:"fact_id"`
		Problem    string         `json:"problem"`
		Applied    int64          `json:"applied"`
		Deliveries []jsonDelivery `json:"deliveries"`
	}
	jsonDelivery struct {
		Type     string        `json:"type"`
		EventID  string        `json:"event_id,omitempty"`
		Copy     int           `json:"copy"`
		Attempts []jsonAttempt `json:"attempts"`
	}
	jsonAttempt struct {
		AtMS    float64 `json:"at_ms"`
		Outcome string  `json:"outcome"`
		TookMS  float64 `json:"took_ms"`
		Answer  string  `json:"answer,omitempty"`
		Error   string  `json:"error,omitempty"`
	}
)

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// WriteJSON writes the report as one JSON object.
func (r *Report) WriteJSON(w io.Writer) error {
	doc := jsonReport{
		Target: r.Target, Provider: r.Provider, TimeScale: r.TimeScale, FactsPerScenario: r.FactsPerScenario,
		AnswerTimeMS: ms(r.AnswerTime), Lost: r.Lost, Doubled: r.Doubled, Undelivered: r.Undelivered,
		Interrupted: r.Interrupted, Passed: !r.Failed(), Scenarios: []*jsonScenario{},
	}
	for _, s := range r.Scenarios {
		js := &jsonScenario{
			Name: s.Name, About: s.About, Verdict: s.Verdict(), Skipped: s.Skipped, Facts: s.Facts,
			Deliveries: s.Deliveries, Attempts: s.Attempts, Answers: maps.Clone(s.Answers),
			Lost: s.Lost, Doubled: s.Doubled, Undelivered: s.Undelivered, GaveUp: s.GaveUp,
			StillRetrying: s.StillRetrying, P50MS: ms(s.P50), P99MS: ms(s.P99), Failures: []jsonFailure{},
		}
		for _, f := range s.Failures {
			jf := jsonFailure{FactID: f.Fact.ID, Problem: f.Problem, Applied: f.Applied}
			for _, d := range f.Fact.Deliveries() {
				jd := jsonDelivery{Type: d.Event.Type, EventID: d.Event.ID, Copy: d.Copy}
				for _, a := range d.Attempts() {
					jd.Attempts = append(jd.Attempts, jsonAttempt{
						AtMS: ms(a.At), Outcome: a.Outcome(), TookMS: ms(a.Took), Answer: a.Answer, Error: a.Err,
					})
				}
				jf.Deliveries = append(jf.Deliveries, jd)
			}
			js.Failures = append(js.Failures, jf)
		}
		doc.Scenarios = append(doc.Scenarios, js)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
