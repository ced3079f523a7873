// Command plot draws rate against concurrency from `hookinbox bench --json` reports,
// one JSON object after another, as an SVG with a panel per mode: hookinbox's rate and,
// where the report has one, its anchor in the same run. The anchor is pgbench on the
// same SQL for accept and sync, the accept rate of the same run for forward (delivered
// against accepted), and the sync billing endpoint for mixed (processed while
// accepting against sync). Accept and sync also draw the naive receiver of the same
// run (net/http and pgx, one transaction per request), where the report has one. The
// x axis is the senders, or the workers for drain and mixed.
//
//	go run ./bench/plot bench/results/*.json > docs/benchmarks.svg
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"
)

type report struct {
	Mode        string  `json:"mode"`
	Concurrency int     `json:"concurrency"`
	Rate        float64 `json:"rate"`
	Drain       *struct {
		Workers int `json:"workers"`
	} `json:"drain"`
	Pgbench *struct {
		TPS float64 `json:"tps"`
	} `json:"pgbench"`
	Naive *struct {
		RequestRate float64 `json:"request_rate"`
	} `json:"naive"`
	Forward *struct {
		AcceptRate float64 `json:"accept_rate"`
	} `json:"forward"`
	Mixed *struct {
		Workers int `json:"workers"`
		Sync    *struct {
			RequestRate float64 `json:"request_rate"`
		} `json:"sync"`
	} `json:"mixed"`
}

// point is one report: hookinbox's rate, its anchor's and the naive receiver's (0:
// none) at x.
type point struct{ x, hookinbox, anchor, naive float64 }

// anchors names each mode's anchor, under its panel.
var anchors = map[string]string{
	"accept":  "pgbench, same SQL",
	"sync":    "pgbench, same SQL",
	"forward": "accepted; hookinbox: delivered",
	"mixed":   "sync endpoint; hookinbox: processed",
}

func main() {
	byMode := map[string][]point{}
	for _, path := range os.Args[1:] {
		if err := read(path, byMode); err != nil {
			fmt.Fprintln(os.Stderr, "plot:", err)
			os.Exit(1)
		}
	}
	if len(byMode) == 0 {
		fmt.Fprintln(os.Stderr, "usage: plot REPORT.jsonl... > out.svg")
		os.Exit(2)
	}
	draw(os.Stdout, byMode)
}

func read(path string, byMode map[string][]point) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	dec := json.NewDecoder(f) // reports one after another, indented or not
	for {
		var r report
		err := dec.Decode(&r)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		p := point{x: float64(r.Concurrency), hookinbox: r.Rate}
		switch {
		case r.Drain != nil && r.Drain.Workers > 0:
			p.x = float64(r.Drain.Workers)
		case r.Forward != nil:
			p.anchor = r.Forward.AcceptRate
		case r.Mixed != nil:
			p.x = float64(r.Mixed.Workers)
			if r.Mixed.Sync != nil {
				p.anchor = r.Mixed.Sync.RequestRate
			}
		case r.Pgbench != nil:
			p.anchor = r.Pgbench.TPS
		}
		if r.Naive != nil {
			p.naive = r.Naive.RequestRate
		}
		byMode[r.Mode] = append(byMode[r.Mode], p)
	}
}

const (
	panelW, panelH = 360, 260
	margin         = 50
)

func draw(w io.Writer, byMode map[string][]point) {
	modes := make([]string, 0, len(byMode))
	for m := range byMode {
		modes = append(modes, m)
	}
	sort.Strings(modes)
	width := len(modes)*(panelW+margin) + margin
	height := panelH + 2*margin + 44
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", width, height)
	fmt.Fprintf(w, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	for n, mode := range modes {
		pts := byMode[mode]
		sort.Slice(pts, func(a, b int) bool { return pts[a].x < pts[b].x })
		ox, oy := float64(margin+n*(panelW+margin)), float64(margin)
		panel(w, mode, pts, ox, oy)
	}
	fmt.Fprintf(w, `<text x="%d" y="%d"><tspan fill="#1f77b4">━ hookinbox</tspan>   <tspan fill="#d62728">┅ its anchor in the same run (under each panel)</tspan>   <tspan fill="#2ca02c">┄ the naive receiver, same run</tspan>   x: concurrency (senders, or workers for drain and mixed); y: per second</text>`+"\n",
		margin, height-12)
	fmt.Fprintln(w, "</svg>")
}

func panel(w io.Writer, mode string, pts []point, ox, oy float64) {
	maxX, maxY := 1.0, 1.0
	for _, p := range pts {
		maxX = math.Max(maxX, p.x)
		maxY = math.Max(maxY, math.Max(p.hookinbox, math.Max(p.anchor, p.naive)))
	}
	maxY = niceCeil(maxY)
	// x on a log scale: concurrencies are 1, 2, 4, ... 256.
	px := func(x float64) float64 { return ox + panelW*math.Log2(math.Max(x, 1))/math.Max(math.Log2(maxX), 1) }
	py := func(y float64) float64 { return oy + panelH - panelH*y/maxY }
	fmt.Fprintf(w, `<text x="%.0f" y="%.0f" font-weight="bold">%s</text>`+"\n", ox, oy-10, mode)
	fmt.Fprintf(w, `<rect x="%.0f" y="%.0f" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", ox, oy, panelW, panelH)
	for i := 0; i <= 4; i++ {
		y := maxY * float64(i) / 4
		fmt.Fprintf(w, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#eee"/><text x="%.0f" y="%.1f" text-anchor="end">%.0f</text>`+"\n",
			ox, ox+panelW, py(y), py(y), ox-4, py(y)+4, y)
	}
	for _, p := range pts {
		fmt.Fprintf(w, `<text x="%.1f" y="%.0f" text-anchor="middle">%.0f</text>`+"\n", px(p.x), oy+panelH+14, p.x)
	}
	line(w, pts, px, py, func(p point) float64 { return p.hookinbox }, "#1f77b4", "")
	line(w, pts, px, py, func(p point) float64 { return p.anchor }, "#d62728", `stroke-dasharray="5,3"`)
	line(w, pts, px, py, func(p point) float64 { return p.naive }, "#2ca02c", `stroke-dasharray="2,3"`)
	if a, ok := anchors[mode]; ok {
		fmt.Fprintf(w, `<text x="%.0f" y="%.0f" fill="#d62728">┅ %s</text>`+"\n", ox, oy+panelH+30, a)
	}
	for _, p := range pts {
		if p.naive > 0 {
			fmt.Fprintf(w, `<text x="%.0f" y="%.0f" fill="#2ca02c">┄ naive receiver: net/http + pgx, one transaction per request</text>`+"\n", ox, oy+panelH+44)
			break
		}
	}
}

func line(w io.Writer, pts []point, px, py func(float64) float64, y func(point) float64, color, dash string) {
	var path []string
	for _, p := range pts {
		if y(p) <= 0 {
			continue
		}
		path = append(path, fmt.Sprintf("%.1f,%.1f", px(p.x), py(y(p))))
		fmt.Fprintf(w, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", px(p.x), py(y(p)), color)
	}
	if len(path) > 1 {
		fmt.Fprintf(w, `<polyline fill="none" stroke="%s" stroke-width="2" %s points="%s"/>`+"\n", color, dash, strings.Join(path, " "))
	}
}

func niceCeil(v float64) float64 {
	mag := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= v {
			return m * mag
		}
	}
	return 10 * mag
}
