package chaos

import (
	"fmt"
	"io"
	"strconv"
)

// PrintTable writes the checks and the figures of reports side by side, one column
// per scenario, then the examples behind every count that is not 0.
func PrintTable(w io.Writer, reports []*Report) {
	width := len("check (must be 0)")
	for _, c := range append(append([]string{}, Checks...), Figures...) {
		width = max(width, len(c))
	}
	row := func(name string, cell func(*Report) string) {
		fmt.Fprintf(w, "%-*s", width, name)
		for _, r := range reports {
			fmt.Fprintf(w, "  %8s", cell(r))
		}
		fmt.Fprintln(w)
	}
	row("check (must be 0)", func(r *Report) string { return r.Scenario })
	for _, c := range Checks {
		row(c, func(r *Report) string { return strconv.Itoa(r.Findings.Count(c)) })
	}
	fmt.Fprintln(w)
	row("what happened", func(*Report) string { return "" })
	for _, f := range Figures {
		row(f, func(r *Report) string { return strconv.Itoa(r.Figures[f]) })
	}
	row("seconds", func(r *Report) string { return fmt.Sprintf("%.0f", r.Elapsed.Seconds()) })
	for _, r := range reports {
		for _, c := range Checks {
			x := r.Findings[c]
			if x == nil || x.Count == 0 {
				continue
			}
			fmt.Fprintf(w, "%s: %s: %d, e.g.\n", r.Scenario, c, x.Count)
			for _, e := range x.Examples {
				fmt.Fprintf(w, "    %s\n", e)
			}
		}
	}
}
