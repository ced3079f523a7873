package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Proc is one hookinbox serve process that the harness kills and restarts. An exit
// the harness did not cause is counted (and the process restarted): a server must not
// die of a database restart, a slow handler or a failing sink.
type Proc struct {
	Name string
	Bin  string
	Args []string
	Env  []string
	// Addr is where it listens (its --listen).
	Addr string
	// Log receives its stderr and stdout, across restarts.
	Log *os.File
	// Receives and Dispatches report whether it serves the endpoints and whether it
	// runs a dispatcher.
	Receives, Dispatches bool

	// life is held through a kill and its restart, a graceful restart and a pause,
	// so that they happen one after the other: a kill waits for a paused zombie to
	// wake, and two restarts never start two processes on one port.
	life     sync.Mutex
	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan struct{}
	stopping bool // a kill or stop of ours is in progress
	closed   bool // no more restarts

	starts, kills, ownExits, pauses, terms int

	// The counters read from /metrics (scrape.go): their totals over every life of
	// the process, and the last value read in the current one (gen counts starts).
	gen       int
	seenGen   int
	lastValue map[string]float64
	totals    map[string]float64
}

// Start starts the process (again).
func (p *Proc) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.startLocked()
}

func (p *Proc) startLocked() error {
	if p.closed || p.running() {
		return nil
	}
	cmd := exec.Command(p.Bin, p.Args...)
	cmd.Env = append(os.Environ(), p.Env...)
	cmd.Stdout, cmd.Stderr = p.Log, p.Log
	// Its own process group: a signal to the harness's terminal does not reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("error starting %s: %w", p.Name, err)
	}
	fmt.Fprintf(p.Log, "chaos: started %s pid %d at %s\n", p.Name, cmd.Process.Pid, time.Now().Format(time.RFC3339Nano))
	p.cmd, p.done, p.stopping = cmd, make(chan struct{}), false
	p.starts++
	p.gen++
	done := p.done
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		defer p.mu.Unlock()
		close(done)
		if p.stopping || p.closed || p.cmd != cmd {
			return
		}
		// It exited on its own: that is a finding. Restart it so the run goes on.
		p.ownExits++
		fmt.Fprintf(p.Log, "chaos: %s exited on its own: %v\n", p.Name, err)
		time.AfterFunc(200*time.Millisecond, func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			if !p.closed && p.cmd == cmd {
				_ = p.startLocked()
			}
		})
	}()
	return nil
}

// running reports whether the last process started is still running.
func (p *Proc) running() bool {
	return p.cmd != nil && isRunning(p.done)
}

// KillAndRestart sends SIGKILL, waits for the process to be gone — nothing of it runs
// after, no deferred function, no shutdown, no final statement — and starts it again
// after delay. A process that was not running, or could not be signalled or started
// again, is an error: the fault asked for did not happen.
func (p *Proc) KillAndRestart(delay time.Duration) error {
	p.life.Lock()
	defer p.life.Unlock()
	if err := p.kill(); err != nil {
		return err
	}
	time.Sleep(delay)
	return p.Start()
}

func (p *Proc) kill() error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.stopping = true
	p.mu.Unlock()
	if cmd == nil || !isRunning(done) {
		return fmt.Errorf("kill of %s: it was not running", p.Name)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill of %s: %w", p.Name, err)
	}
	<-done
	p.mu.Lock()
	p.kills++
	p.mu.Unlock()
	fmt.Fprintf(p.Log, "chaos: killed %s pid %d at %s\n", p.Name, cmd.Process.Pid, time.Now().Format(time.RFC3339Nano))
	return nil
}

// TerminateAndRestart asks the process to shut down (SIGTERM), as a deploy does —
// it stops accepting, lets the requests and events in flight finish within
// shutdown_timeout, and exits — waits for it, and starts it again. A process that
// was not running, could not be signalled or started, or did not exit within timeout
// (it is killed then) is an error.
func (p *Proc) TerminateAndRestart(timeout time.Duration) error {
	p.life.Lock()
	defer p.life.Unlock()
	err := p.terminate(timeout)
	if serr := p.Start(); err == nil {
		err = serr
	}
	return err
}

func (p *Proc) terminate(timeout time.Duration) error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.stopping = true
	p.mu.Unlock()
	if cmd == nil || !isRunning(done) {
		return fmt.Errorf("graceful restart of %s: it was not running", p.Name)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("graceful restart of %s: %w", p.Name, err)
	}
	var err error
	select {
	case <-done:
	case <-time.After(timeout):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-done
		err = fmt.Errorf("graceful restart of %s: still running %s after SIGTERM, killed", p.Name, timeout)
	}
	p.mu.Lock()
	p.terms++
	p.mu.Unlock()
	fmt.Fprintf(p.Log, "chaos: terminated %s pid %d at %s (%s)\n", p.Name, cmd.Process.Pid, time.Now().Format(time.RFC3339Nano), cmd.ProcessState)
	return err
}

// Stop asks the process to shut down (SIGTERM), kills it after timeout, and does not
// restart it.
func (p *Proc) Stop(timeout time.Duration) {
	p.life.Lock()
	defer p.life.Unlock()
	p.mu.Lock()
	p.closed, p.stopping = true, true
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(timeout):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-done
	}
}

func isRunning(done chan struct{}) bool {
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// Counts is what happened to a process.
type Counts struct{ Starts, Kills, OwnExits, Pauses, Terminations int }

// Counts returns the process's starts, kills, own exits, completed pauses and
// graceful restarts.
func (p *Proc) Counts() Counts {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Counts{p.starts, p.kills, p.ownExits, p.pauses, p.terms}
}

// Pause stops the process (SIGSTOP) for d and lets it go on (SIGCONT); a kill waits
// for the end of the pause. A process paused past its leases wakes up as a zombie: its
// workers' receipts and its dispatcher's messages were claimed again by others, and
// whatever it does next must be fenced off or find the work done. A process that was
// not running or could not be signalled is an error.
func (p *Proc) Pause(d time.Duration) error {
	p.life.Lock()
	defer p.life.Unlock()
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil || !isRunning(done) {
		return fmt.Errorf("pause of %s: it was not running", p.Name)
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("pause of %s: %w", p.Name, err)
	}
	fmt.Fprintf(p.Log, "chaos: paused %s pid %d for %s at %s\n", p.Name, cmd.Process.Pid, d, time.Now().Format(time.RFC3339Nano))
	time.Sleep(d)
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		return fmt.Errorf("resuming %s: %w", p.Name, err)
	}
	p.mu.Lock()
	p.pauses++
	p.mu.Unlock()
	return nil
}
