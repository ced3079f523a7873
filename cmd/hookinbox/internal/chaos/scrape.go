package chaos

import (
	"bufio"
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Scraped are the counters of hookinbox's /metrics the harness reads from each
// process, as "name" plus a label that every counted series carries, by the figure
// they feed.
var scraped = map[string]struct{ name, label string }{
	FigZombieAttempts: {"hookinbox_attempts_total", `result="already_processed"`},
	FigStaleMarks:     {"hookinbox_outbox_deliveries_total", `result="stale"`},
}

// Scrape reads the process's /metrics once and adds what each scraped counter grew
// by since the last read to its total. A counter starts again at 0 with each start of
// the process; what a process counted between its last read and a kill is lost, so
// the totals are at least what happened.
func (p *Proc) Scrape(ctx context.Context, client *http.Client) {
	p.mu.Lock()
	gen := p.gen
	p.mu.Unlock()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.Addr+"/metrics", nil)
	if err != nil {
		return
	}
	resp, err := client.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	values := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		for fig, c := range scraped {
			if strings.HasPrefix(line, c.name+"{") && strings.Contains(line, c.label) {
				if v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64); err == nil {
					values[fig] += v
				}
			}
		}
	}
	if sc.Err() != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gen != gen {
		return // restarted while being read
	}
	if p.seenGen != gen {
		p.seenGen, p.lastValue = gen, map[string]float64{}
	}
	if p.totals == nil {
		p.totals = map[string]float64{}
	}
	for fig, v := range values {
		if d := v - p.lastValue[fig]; d > 0 {
			p.totals[fig] += d
		}
		p.lastValue[fig] = v
	}
}

// scrapeAll reads every process's counters every second until ctx ends.
func scrapeAll(ctx context.Context, procs []*Proc, client *http.Client) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		for _, p := range procs {
			go p.Scrape(ctx, client)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Scraped returns the process's total of a scraped figure.
func (p *Proc) Scraped(fig string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return int(p.totals[fig])
}
