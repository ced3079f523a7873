package backfill

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"golang.org/x/time/rate"
)

// ClientConfig tunes NewHTTPClient.
type ClientConfig struct {
	// Rate is the most requests per second sent to the provider. Stripe allows 100
	// read requests a second in live mode and 25 in test mode; GitHub allows 5,000
	// requests an hour to a token.
	//
	// Defaults to 10.
	Rate float64

	// MaxRetries is how many times a request refused with 429 (or GitHub's 403 with
	// Retry-After or an exhausted rate limit) is sent again. The special value -1
	// sends none again.
	//
	// Defaults to 5.
	MaxRetries int

	// MaxWait is the longest wait for one retry. A provider asking for longer (a
	// GitHub limit that resets in half an hour) gets its answer passed back as the
	// error, and the run stops at its checkpoint.
	//
	// Defaults to 2 minutes.
	MaxWait time.Duration

	// WaitFunc, when set, is told of every wait for a rate limit, for progress.
	WaitFunc func(wait time.Duration, status int)

	// Transport sends the requests. Defaults to http.DefaultTransport.
	Transport http.RoundTripper
}

func (c ClientConfig) withDefaults() ClientConfig {
	if c.Rate <= 0 {
		c.Rate = 10
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = 5
	}
	if c.MaxWait <= 0 {
		c.MaxWait = 2 * time.Minute
	}
	if c.Transport == nil {
		c.Transport = http.DefaultTransport
	}
	return c
}

// NewHTTPClient returns the HTTP client to give a provider's Go client (StripeBackends,
// github.NewClient): it sends at most config.Rate requests a second and, when the
// provider answers that the rate limit is hit, waits as long as it asks (Retry-After,
// or GitHub's X-RateLimit-Reset) and sends the request again. Only GET and HEAD
// requests are retried: a backfill only reads.
func NewHTTPClient(config ClientConfig) *http.Client {
	c := config.withDefaults()
	return &http.Client{
		Timeout: 60 * time.Second,
		Transport: &rateLimited{
			next:    c.Transport,
			limiter: rate.NewLimiter(rate.Limit(c.Rate), 1),
			config:  c,
		},
	}
}

type rateLimited struct {
	next    http.RoundTripper
	limiter *rate.Limiter
	config  ClientConfig
}

func (t *rateLimited) RoundTrip(req *http.Request) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		if err := t.limiter.Wait(req.Context()); err != nil {
			return nil, err
		}
		resp, err := t.next.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		wait, limited := retryAfter(resp, time.Now())
		if !limited || attempt >= t.config.MaxRetries || !readOnly(req) {
			return resp, nil
		}
		if wait > t.config.MaxWait {
			return resp, nil
		}
		if wait < 0 {
			// No usable hint: back off 1, 2, 4 ... seconds.
			wait = min(time.Duration(1<<attempt)*time.Second, t.config.MaxWait)
		}
		resp.Body.Close()
		if t.config.WaitFunc != nil {
			t.config.WaitFunc(wait, resp.StatusCode)
		}
		if err := sleep(req.Context(), wait); err != nil {
			return nil, err
		}
	}
}

// readOnly reports whether req can be sent again as it is.
func readOnly(req *http.Request) bool {
	return req.Method == http.MethodGet || req.Method == http.MethodHead
}

// retryAfter reports whether resp says the rate limit was hit and how long it asks
// to wait (negative: it does not say). A 403 counts only with GitHub's signs of a rate limit:
// a Retry-After (its secondary limits) or X-RateLimit-Remaining 0; any other 403 is a
// permission error, and retrying it would only spend the limit.
func retryAfter(resp *http.Response, now time.Time) (time.Duration, bool) {
	h := resp.Header
	switch resp.StatusCode {
	case http.StatusTooManyRequests:
	case http.StatusForbidden:
		if h.Get("Retry-After") == "" && h.Get("X-RateLimit-Remaining") != "0" {
			return 0, false
		}
	default:
		return 0, false
	}
	if v := h.Get("Retry-After"); v != "" {
		if s, err := strconv.Atoi(v); err == nil && s >= 0 {
			return time.Duration(s) * time.Second, true
		}
		if at, err := http.ParseTime(v); err == nil {
			return max(at.Sub(now), 0), true
		}
	}
	if h.Get("X-RateLimit-Remaining") == "0" {
		if s, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64); err == nil {
			return max(time.Unix(s, 0).Sub(now), 0), true
		}
	}
	return -1, true
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("waiting for the rate limit: %w", ctx.Err())
	case <-t.C:
		return nil
	}
}
