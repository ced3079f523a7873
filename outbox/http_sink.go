package outbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// HTTPSink POSTs the payload as JSON to a URL, with Message.Headers (the idempotency
// key, the fencing token, the source event). Any 2xx is a delivery; anything else,
// or no answer before the dispatcher's deadline, is a failure that is retried.
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
}

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
		return fmt.Errorf("sink answered %s", resp.Status)
	}
	return nil
}
