package outbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// HTTPSink POSTs the payload as JSON to a URL, with OutboxMessage.Headers (the
// idempotency key, the fencing token, the source event), over kept-alive connections.
// Any 2xx is a delivery; anything else, or no answer before the dispatcher's deadline,
// is a failure that is retried. A 429 or 503 with Retry-After is a RetryAfterError:
// the dispatcher waits as long before it sends to the URL again.
type HTTPSink struct {
	// URL receives the POST. Required.
	URL string
	// Client sends the request.
	//
	// Defaults to a client that does not follow redirects.
	Client *http.Client
}

var noRedirects = &http.Client{
	// A redirect would replay the body to another address; treat it as a failure.
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Transport:     keepAlive,
}

// keepAlive keeps as many idle connections to a sink as the dispatcher has deliveries
// in flight to it, so each delivery reuses a connection: net/http's default keeps two
// per host, and every other delivery would open (and leave in TIME_WAIT) a connection
// of its own.
var keepAlive = func() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 1024
	t.MaxIdleConnsPerHost = 256
	return t
}()

// Deliver posts m.
func (s *HTTPSink) Deliver(ctx context.Context, m *hookinboxtype.OutboxMessage) error {
	if s.URL == "" {
		return errors.New("http sink has no URL")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, bytes.NewReader(m.Payload))
	if err != nil {
		return fmt.Errorf("error building request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "hookinbox-dispatcher")
	for k, v := range m.Headers() {
		req.Header.Set(k, v)
	}
	injectHTTP(ctx, req.Header)
	client := s.Client
	if client == nil {
		client = noRedirects
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("error posting to sink: %w", err)
	}
	defer resp.Body.Close()
	// Drain a little so the connection can be reused; the body itself is not kept,
	// since a receiver may echo the payload back.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		err := fmt.Errorf("sink answered %s", resp.Status)
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
			if after, ok := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
				return &RetryAfterError{Err: err, After: after}
			}
		}
		return err
	}
	return nil
}

// parseRetryAfter reads a Retry-After header: delay-seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(v); err == nil {
		return time.Duration(max(s, 0)) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}
