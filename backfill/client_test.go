package backfill

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

// retryAfter reads the rate limits of both providers and nothing else: a 403 without
// GitHub's signs of a rate limit is a permission error, never retried.
func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name    string
		status  int
		header  map[string]string
		wait    time.Duration
		limited bool
	}{
		{"429 with seconds", 429, map[string]string{"Retry-After": "3"}, 3 * time.Second, true},
		{"429 with a date", 429, map[string]string{"Retry-After": now.Add(5 * time.Second).Format(http.TimeFormat)}, 5 * time.Second, true},
		{"429 without a hint", 429, nil, -1, true},
		{"github secondary limit", 403, map[string]string{"Retry-After": "60"}, time.Minute, true},
		{"github primary limit", 403, map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": strconv.FormatInt(now.Add(time.Minute).Unix(), 10)}, time.Minute, true},
		{"403 permission", 403, map[string]string{"X-RateLimit-Remaining": "4999"}, 0, false},
		{"500", 500, map[string]string{"Retry-After": "1"}, 0, false},
	} {
		resp := &http.Response{StatusCode: tt.status, Header: http.Header{}}
		for k, v := range tt.header {
			resp.Header.Set(k, v)
		}
		wait, limited := retryAfter(resp, now)
		if wait != tt.wait || limited != tt.limited {
			t.Errorf("%s: %v %t, want %v %t", tt.name, wait, limited, tt.wait, tt.limited)
		}
	}
}
