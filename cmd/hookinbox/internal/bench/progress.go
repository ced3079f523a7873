package bench

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// progress prints one line on a terminal, rewritten every second, with a count and
// its rate over the last second. It prints nothing when w is not a terminal.
type progress struct {
	w   io.Writer
	tty bool

	mu   sync.Mutex
	stop chan struct{}
	done chan struct{}
}

func newProgress(w io.Writer) *progress { return &progress{w: w, tty: isTerminal(w)} }

// track starts a line "label: N unit, R unit/s" for the count read.
func (p *progress) track(label, unit string, read func() int64) {
	if !p.tty {
		return
	}
	p.untrack()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	stop, done := p.stop, p.done
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		last, lastAt := read(), time.Now()
		for {
			select {
			case <-stop:
				fmt.Fprint(p.w, "\r\x1b[K")
				return
			case now := <-tick.C:
				n := read()
				rate := float64(n-last) / now.Sub(lastAt).Seconds()
				fmt.Fprintf(p.w, "\r\x1b[K%s: %d %s, %.0f/s", label, n, unit, rate)
				last, lastAt = n, now
			}
		}
	}()
}

// untrack stops the line and clears it.
func (p *progress) untrack() {
	p.mu.Lock()
	stop, done := p.stop, p.done
	p.stop, p.done = nil, nil
	p.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
}

// isTerminal reports whether w is a terminal, for the progress line.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
