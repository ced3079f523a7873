//go:build unix

// Command httpfloor is the HTTP floor of `hookinbox bench --mode accept`: a net/http
// server, with serve's timeouts, that reads each request's body and answers 202
// "accepted" and does nothing else — no signature, no JSON, no database. bench's load
// generator against it measures what HTTP alone costs on the machine, both sides:
//
//	go run ./cmd/hookinbox/internal/bench/httpfloor &
//	hookinbox bench --mode accept --url http://127.0.0.1:18099/ --secret x --concurrency 32
//	kill %1    # prints the requests served and its CPU time per request
//
// bench's cpu line gives the load generator's CPU time per request and how busy the
// cores were; this program prints its own on SIGINT or SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/server"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18099", "address to listen on")
	flag.Parse()

	var served atomic.Int64
	srv := &http.Server{
		Addr: *addr,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Hookinbox-Outcome", "accepted")
			w.WriteHeader(http.StatusAccepted)
			served.Add(1)
		}),
		ReadHeaderTimeout: server.ReadHeaderTimeout,
		ReadTimeout:       server.ReadTimeout,
		WriteTimeout:      server.WriteTimeout,
		IdleTimeout:       server.IdleTimeout,
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	log.Printf("httpfloor: listening on http://%s/", *addr)
	if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		log.Fatal(err)
	}

	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		log.Fatal(err)
	}
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	n := served.Load()
	fmt.Fprintf(os.Stderr, "httpfloor: %d requests served, CPU %s", n, cpu.Round(time.Millisecond))
	if n > 0 {
		fmt.Fprintf(os.Stderr, ", %.1f µs per request", float64(cpu)/float64(time.Microsecond)/float64(n))
	}
	fmt.Fprintln(os.Stderr)
}
