package probe

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// failuresShown is how many failures per scenario the table details; --json lists
// them all.
const failuresShown = 5

// WriteTable writes the report for a person: a table of the scenarios, then each
// failure with the deliveries sent and their answers, enough to reproduce it.
func (r *Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "hookinbox probe: %s receiver at %s\n", r.Provider, r.Target)
	fmt.Fprintf(w, "%d facts per scenario; retry schedule compressed %gx; receiver's median answer %s\n\n",
		r.FactsPerScenario, r.TimeScale, round(r.AnswerTime))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIO\tFACTS\tDELIVERIES\tATTEMPTS\tANSWERS\tP50\tP99\tLOST\tDOUBLED\tUNDELIVERED\tVERDICT")
	for _, s := range r.Scenarios {
		if s.Skipped != "" {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\t-\t-\t-\tskipped: %s\n", s.Name, s.Skipped)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n", s.Name, s.Facts, s.Deliveries, s.Attempts,
			answers(s.Answers), round(s.P50), round(s.P99), s.Lost, s.Doubled, s.Undelivered, s.Verdict())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range r.Scenarios {
		if len(s.Failures) > 0 {
			fmt.Fprintf(w, "\n%s (%s): %s\n", s.Name, s.About, s.summary())
			s.writeFailures(w, failuresShown)
		}
	}
	if r.Interrupted {
		fmt.Fprintln(w, "\ninterrupted: deliveries with retries to go were stopped; they count as undelivered")
	}
	verdict := "nothing lost, nothing doubled"
	if r.Failed() {
		verdict = fmt.Sprintf("%d lost, %d doubled, %d undelivered", r.Lost, r.Doubled, r.Undelivered)
	}
	_, err := fmt.Fprintf(w, "\n%s\n", verdict)
	return err
}

// summary counts the scenario's failures in a line.
func (s *ScenarioReport) summary() string {
	var parts []string
	for _, c := range []struct {
		n    int
		what string
	}{{s.Lost, "lost"}, {s.Doubled, "doubled"}, {s.Undelivered, "undelivered"}} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	return strings.Join(parts, ", ")
}

// writeFailures details up to limit failures (0: all): each fact, what the check
// said, and every delivery with its attempts.
func (s *ScenarioReport) writeFailures(w io.Writer, limit int) {
	for i, f := range s.Failures {
		if limit > 0 && i == limit {
			fmt.Fprintf(w, "  ... and %d more (--json lists them all)\n", len(s.Failures)-limit)
			return
		}
		fmt.Fprintf(w, "  %s %s: %s\n", f.Fact.ID, f.Problem, f.explain())
		for _, d := range f.Fact.Deliveries() {
			fmt.Fprintf(w, "    %s (copy %d)\n", d.Event.label(), d.Copy)
			for _, a := range d.Attempts() {
				fmt.Fprintf(w, "      +%.3fs  %s\n", a.At.Seconds(), a.describe())
			}
		}
	}
}

// explain says what the check found and what the receiver answered.
func (f Failure) explain() string {
	switch f.Problem {
	case "doubled":
		return fmt.Sprintf("applied %d times", f.Applied)
	case "lost":
		return "acknowledged (2xx), applied 0 times"
	default:
		return "applied 0 times, and no 2xx for its outcome: the provider gave up"
	}
}

// describe is an attempt in a few words.
func (a Attempt) describe() string {
	switch {
	case a.Status != 0 && a.Answer != "":
		return fmt.Sprintf("%d in %s: %s", a.Status, round(a.Took), a.Answer)
	case a.Status != 0:
		return fmt.Sprintf("%d in %s", a.Status, round(a.Took))
	case a.Cut:
		return fmt.Sprintf("hung up after %s (the provider's timeout, while the receiver worked)", round(a.Took))
	case a.TimedOut:
		return fmt.Sprintf("no answer within the provider's timeout (%s)", round(a.Took))
	default:
		return "error: " + a.Err
	}
}

// answers is a count of outcomes on one line: "200×58 500×2 cut×20".
func answers(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	// Status codes first, in order, then the words.
	slices.SortFunc(keys, func(a, b string) int {
		_, errA := strconv.Atoi(a)
		_, errB := strconv.Atoi(b)
		if (errA == nil) != (errB == nil) {
			if errA == nil {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s×%d", k, m[k])
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

// round shortens a duration for a table.
func round(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	default:
		return d.Round(time.Microsecond).String()
	}
}
