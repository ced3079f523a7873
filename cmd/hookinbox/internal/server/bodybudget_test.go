package server

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/config"
)

// budgetServer serves budget's handler around a handler that reads the whole body
// and echoes it, or answers 503 when the body reports ErrOverloaded, as hookinbox's
// endpoint does.
func budgetServer(t *testing.T, size, limit int64) (*bodyBudget, *httptest.Server) {
	t.Helper()
	b := newBodyBudget(config.HTTP{MaxInflightBodyBytes: size}, nil, discardLogger())
	srv := httptest.NewServer(b.handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if errors.Is(err, hookinbox.ErrOverloaded) {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		if err != nil {
			t.Errorf("reading the body: %v", err)
		}
		_, _ = w.Write(body)
	}), limit))
	t.Cleanup(srv.Close)
	return b, srv
}

func post(t *testing.T, url string, body io.Reader, chunked bool) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if chunked {
		req.ContentLength = -1
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	return resp, got
}

// A body read through the budget's buffers is the body sent, whatever its length
// against the buffers' size, declared or chunked; a chunked body over the limit is
// given to the handler one byte over it, so that the endpoint answers 413.
func TestBodyBudget_BodiesArriveWhole(t *testing.T) {
	t.Parallel()
	const limit = 100_000
	b, srv := budgetServer(t, 1<<20, limit)
	for _, n := range []int{1, bodyChunk - 1, bodyChunk, bodyChunk + 1, 3*bodyChunk + 17, limit} {
		for _, chunked := range []bool{false, true} {
			body := bytes.Repeat([]byte("0123456789abcdef"), n/16+1)[:n]
			resp, got := post(t, srv.URL, bytes.NewReader(body), chunked)
			if resp.StatusCode != 200 || !bytes.Equal(got, body) {
				t.Errorf("%d bytes (chunked %v): %d, %d bytes back", n, chunked, resp.StatusCode, len(got))
			}
		}
	}
	body := bytes.Repeat([]byte("x"), limit+10)
	if _, got := post(t, srv.URL, bytes.NewReader(body), true); len(got) != limit+1 {
		t.Errorf("a chunked body over the limit reached the handler with %d bytes, want %d", len(got), limit+1)
	}
	if n := b.inflight.Load(); n != 0 {
		t.Errorf("%d bytes still reserved after every request was answered", n)
	}
}

// A body that does not fit is refused before it is read, with the connection closed;
// bodies over SmallBodyBytes share three quarters of the budget, so a small body
// still fits when they have taken theirs.
func TestBodyBudget_RefusesWhatDoesNotFitAndKeepsRoomForSmallBodies(t *testing.T) {
	t.Parallel()
	const size = 1 << 20
	b, srv := budgetServer(t, size, size)
	large := int64(size / 4 * 3)
	if !b.reserve(large) {
		t.Fatal("the large bodies' share could not be reserved")
	}
	resp, _ := post(t, srv.URL, strings.NewReader(strings.Repeat("x", config.SmallBodyBytes+1)), false)
	if resp.StatusCode != http.StatusServiceUnavailable || !resp.Close {
		t.Errorf("a large body beyond the large bodies' share: %d, close %v; want 503 and the connection closed", resp.StatusCode, resp.Close)
	}
	small := strings.Repeat("x", config.SmallBodyBytes)
	if resp, got := post(t, srv.URL, strings.NewReader(small), false); resp.StatusCode != 200 || string(got) != small {
		t.Errorf("a small body with the large share taken: %d", resp.StatusCode)
	}
	for range (size - large) / config.SmallBodyBytes {
		if !b.reserve(config.SmallBodyBytes) {
			t.Fatal("the rest of the budget could not be reserved in small bodies")
		}
	}
	if resp, _ := post(t, srv.URL, strings.NewReader("{}"), false); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a small body in a full budget: %d, want 503", resp.StatusCode)
	}
	b.free(large)
	for range (size - large) / config.SmallBodyBytes {
		b.free(config.SmallBodyBytes)
	}
	if resp, _ := post(t, srv.URL, strings.NewReader(small+"x"), false); resp.StatusCode != 200 {
		t.Errorf("a large body once the budget is free: %d, want 200", resp.StatusCode)
	}
	if peak := b.peak.Load(); peak > size {
		t.Errorf("peak reservation %d over the budget %d", peak, size)
	}
	if n := b.inflight.Load(); n != 0 {
		t.Errorf("%d bytes still reserved", n)
	}
}
