package server

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/config"
)

// bodyChunk is the size of the reused buffers bodies are read into, and so the
// granularity in which the budget counts them (config.BodyGrain).
const bodyChunk = config.BodyGrain

// chunkPool holds the buffers of bodies that were handled, for the next ones.
var chunkPool = sync.Pool{New: func() any { return new([bodyChunk]byte) }}

// bodyBudget bounds the request bodies of the endpoints held in memory at once
// (http.max_inflight_body_bytes). A request reserves its declared length (rounded
// up to whole buffers), or its endpoint's limit when the length is not declared,
// when its handler first reads the body: after the checks that answer without
// reading it (405, 413, 415), before a byte of it is read. Bodies over
// config.SmallBodyBytes share three quarters of the budget, so that a flood of large
// slow bodies leaves room for providers' ordinary events. A request that does not
// fit is answered 503 with Retry-After at once (hookinbox.ErrOverloaded from its
// body) and its connection closed, unread. It does not wait for room: a request
// waiting holds its connection, and a flood of them would hold them all.
//
// The body is then read whole into reused buffers as it arrives: a slow sender holds
// the buffers of what it sent, not of what it declared.
type bodyBudget struct {
	all, large *semaphore.Weighted
	size       int64
	metrics    *Metrics
	logger     *slog.Logger

	inflight atomic.Int64
	// peak is the most bytes reserved at once, for the tests.
	peak atomic.Int64

	// unlimited is the broken variant, for tests only: every body is admitted at
	// once and still counted, as before the budget existed.
	unlimited bool

	// Refusals since the last log line, and when it was written.
	mu      sync.Mutex
	refused int
	logged  time.Time
}

func newBodyBudget(h config.HTTP, metrics *Metrics, logger *slog.Logger) *bodyBudget {
	return &bodyBudget{
		all: semaphore.NewWeighted(h.MaxInflightBodyBytes), large: semaphore.NewWeighted(h.LargeBodyBytes()),
		size: h.MaxInflightBodyBytes, metrics: metrics, logger: logger,
	}
}

// handler wraps an endpoint whose bodies are at most limit bytes.
func (b *bodyBudget) handler(next http.Handler, limit int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := r.ContentLength
		switch {
		case n == 0 || n > limit:
			// No body, or one the endpoint refuses (413) without reading it.
			next.ServeHTTP(w, r)
			return
		case n < 0:
			n = limit
		}
		body := &budgetBody{b: b, w: w, src: r.Body, size: n, limit: limit}
		defer body.release()
		r2 := r.WithContext(r.Context())
		r2.Body = body
		next.ServeHTTP(w, r2)
	})
}

// reserve takes n bytes of the budget if they are free, and reports whether it did.
func (b *bodyBudget) reserve(n int64) bool {
	if !b.unlimited {
		if n > config.SmallBodyBytes && !b.large.TryAcquire(n) {
			return false
		}
		if !b.all.TryAcquire(n) {
			if n > config.SmallBodyBytes {
				b.large.Release(n)
			}
			return false
		}
	}
	now := b.inflight.Add(n)
	for peak := b.peak.Load(); now > peak && !b.peak.CompareAndSwap(peak, now); peak = b.peak.Load() {
	}
	b.metrics.bodyBytesInflight(now)
	return true
}

func (b *bodyBudget) free(n int64) {
	b.metrics.bodyBytesInflight(b.inflight.Add(-n))
	if b.unlimited {
		return
	}
	b.all.Release(n)
	if n > config.SmallBodyBytes {
		b.large.Release(n)
	}
}

// noteRefused counts a refusal, and logs the count at most once per limitLogEvery.
func (b *bodyBudget) noteRefused() {
	b.metrics.bodyBudgetRefused()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refused++
	if now := time.Now(); now.Sub(b.logged) >= limitLogEvery {
		b.logger.Warn("hookinbox: body budget full; requests are answered 503 before their body is read",
			"max_inflight_body_bytes", b.size, "refused", b.refused)
		b.logged, b.refused = now, 0
	}
}

// budgetBody is a request's body under the budget. Its first Read reserves the
// budget and reads the whole body into pooled buffers, then one more byte when the
// length was not declared, so that the endpoint still sees a body over its limit;
// Reads then return it, and the read's error at its end.
type budgetBody struct {
	b   *bodyBudget
	w   http.ResponseWriter
	src io.ReadCloser
	// size is the declared length, or the endpoint's limit when none was declared;
	// limit is the endpoint's.
	size, limit int64

	read     bool
	reserved bool
	chunks   []*[bodyChunk]byte
	n        int64  // bytes held in chunks
	extra    []byte // the byte past limit, when the body has one
	off      int64
	err      error // where reading the source ended: nil at EOF
}

func (bb *budgetBody) Read(p []byte) (int, error) {
	if !bb.read {
		bb.read = true
		if bb.reserved = bb.b.reserve(roundUp(bb.size, bodyChunk)); bb.reserved {
			bb.err = bb.fill()
		} else {
			bb.b.noteRefused()
			// The body stays unread: net/http must close the connection after the
			// answer rather than keep it for a next request, and not wait for the
			// rest of a body under 256 KiB to discard it (a past read deadline ends
			// that wait; a larger one it does not try).
			bb.w.Header().Set("Connection", "close")
			_ = http.NewResponseController(bb.w).SetReadDeadline(time.Unix(1, 0))
			bb.err = fmt.Errorf("%w: request bodies in flight fill http.max_inflight_body_bytes", hookinbox.ErrOverloaded)
		}
	}
	if bb.off < bb.n {
		i := bb.off / bodyChunk
		k := copy(p, bb.chunks[i][bb.off-i*bodyChunk:min(bb.n-i*bodyChunk, bodyChunk)])
		bb.off += int64(k)
		return k, nil
	}
	if len(bb.extra) > 0 {
		k := copy(p, bb.extra)
		bb.extra = bb.extra[k:]
		return k, nil
	}
	if bb.err != nil {
		return 0, bb.err
	}
	return 0, io.EOF
}

// fill reads the source into chunks, taking a buffer from the pool only once the
// ones before it are full, until EOF, an error, or size bytes; then it reads on to
// EOF, keeping the one byte that would make the body larger than its limit.
func (bb *budgetBody) fill() error {
	for bb.n < bb.size {
		if bb.n == int64(len(bb.chunks))*bodyChunk {
			bb.chunks = append(bb.chunks, chunkPool.Get().(*[bodyChunk]byte))
		}
		i := int64(len(bb.chunks) - 1)
		k, err := bb.src.Read(bb.chunks[i][bb.n-i*bodyChunk : min(bb.size-i*bodyChunk, bodyChunk)])
		bb.n += int64(k)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
	var one [1]byte
	k, err := io.ReadFull(bb.src, one[:])
	if k == 1 {
		bb.extra = one[:]
		return nil
	}
	if err == io.EOF {
		return nil
	}
	return err
}

func (bb *budgetBody) Close() error {
	return bb.src.Close()
}

// release gives the buffers back to the pool and the reservation back to the budget,
// once the handler has returned.
func (bb *budgetBody) release() {
	for _, c := range bb.chunks {
		chunkPool.Put(c)
	}
	bb.chunks = nil
	if bb.reserved {
		bb.b.free(roundUp(bb.size, bodyChunk))
	}
}

func roundUp(n, to int64) int64 {
	return (n + to - 1) / to * to
}
