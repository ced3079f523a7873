package backfill_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v74/github"
	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/backfill"
	"github.com/hookinbox/hookinbox/driver/pgxdriver"
	"github.com/hookinbox/hookinbox/internal/testdb"
	"github.com/hookinbox/hookinbox/provider"
)

// fakeDelivery is a delivery of the fake GitHub hook.
type fakeDelivery struct {
	ID     int64
	GUID   string
	Event  string
	Action string
	Status int
	At     time.Time
}

// fakeGitHub serves a repository hook's deliveries as GitHub's REST API does: newest
// first, pages linked by a cursor in the Link header, and each delivery's request.
type fakeGitHub struct {
	srv        *httptest.Server
	deliveries []fakeDelivery // newest first
	pageSize   int

	mu      sync.Mutex
	fetched map[int64]int // GET of one delivery, by id
	lists   []string      // the cursor of each list request
}

func newFakeGitHub(t *testing.T, pageSize int, ds []fakeDelivery) *fakeGitHub {
	f := &fakeGitHub{deliveries: ds, pageSize: pageSize, fetched: map[int64]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeGitHub) client(t *testing.T) *github.Client {
	c := github.NewClient(backfill.NewHTTPClient(backfill.ClientConfig{Rate: 1000})).WithAuthToken("ghp_test")
	u, err := url.Parse(f.srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	c.BaseURL = u
	return c
}

func (f *fakeGitHub) payload(d fakeDelivery) map[string]any {
	body := map[string]any{"number": d.ID, "repository": map[string]any{"full_name": "acme/app"}}
	if d.Action != "" {
		body["action"] = d.Action
	}
	return body
}

func (f *fakeGitHub) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	const prefix = "/repos/acme/app/hooks/7/deliveries"
	if r.Header.Get("Authorization") != "Bearer ghp_test" {
		http.Error(w, `{"message":"Bad credentials"}`, http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path == prefix:
		cursor := r.URL.Query().Get("cursor")
		f.lists = append(f.lists, cursor)
		start, _ := strconv.Atoi(strings.TrimPrefix(cursor, "c"))
		end := min(start+f.pageSize, len(f.deliveries))
		if end < len(f.deliveries) {
			next := fmt.Sprintf("%s%s?cursor=c%d&per_page=%d", f.srv.URL, prefix, end, f.pageSize)
			w.Header().Set("Link", fmt.Sprintf(`<%s>; rel="next"`, next))
		}
		var list []map[string]any
		for _, d := range f.deliveries[start:end] {
			list = append(list, map[string]any{
				"id": d.ID, "guid": d.GUID, "event": d.Event, "action": d.Action, "status_code": d.Status,
				"delivered_at": d.At.Format(time.RFC3339), "redelivery": false,
			})
		}
		_ = json.NewEncoder(w).Encode(list)
	case strings.HasPrefix(r.URL.Path, prefix+"/"):
		id, _ := strconv.ParseInt(strings.TrimPrefix(r.URL.Path, prefix+"/"), 10, 64)
		for _, d := range f.deliveries {
			if d.ID == id {
				f.fetched[id]++
				_ = json.NewEncoder(w).Encode(map[string]any{
					"id": d.ID, "guid": d.GUID, "event": d.Event, "status_code": d.Status,
					"delivered_at": d.At.Format(time.RFC3339),
					"request": map[string]any{
						"headers": map[string]string{"X-GitHub-Delivery": d.GUID, "X-GitHub-Event": d.Event, "X-Hub-Signature-256": "sha256=..."},
						"payload": f.payload(d),
					},
				})
				return
			}
		}
		http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
	default:
		http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
	}
}

func (f *fakeGitHub) fetchedCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.fetched {
		n += c
	}
	return n
}

func setupGitHub(t *testing.T) (context.Context, *testdb.DB, *hookinbox.Inbox[pgx.Tx], *[]string) {
	t.Helper()
	ctx := context.Background()
	db := testdb.New(t)
	v, err := provider.NewGitHub(provider.GitHubConfig{Secrets: []string{"gh_secret"}})
	if err != nil {
		t.Fatal(err)
	}
	inbox, err := hookinbox.New(pgxdriver.New(db.Pool), &hookinbox.Config{
		Endpoints: []hookinbox.EndpointConfig{{Name: "gh", Verifier: v, Mode: hookinbox.ModeSync}},
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := inbox.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	handled := &[]string{}
	inbox.Handle("gh", "*", func(_ context.Context, _ pgx.Tx, ev hookinbox.Event) error {
		mu.Lock()
		defer mu.Unlock()
		*handled = append(*handled, ev.Type+" "+ev.ID)
		return nil
	})
	return ctx, db, inbox, handled
}

// A hook's deliveries, newest first: GUID g3 failed and was redelivered (a second
// delivery, same GUID); g2 and g3 never reached the receiver; g5 is older than Since.
func gitHubDeliveries(now time.Time) []fakeDelivery {
	return []fakeDelivery{
		{ID: 106, GUID: "g3", Event: "issues", Action: "opened", Status: 502, At: now.Add(-1 * time.Hour)},
		{ID: 105, GUID: "g4", Event: "push", Status: 200, At: now.Add(-2 * time.Hour)},
		{ID: 104, GUID: "g3", Event: "issues", Action: "opened", Status: 502, At: now.Add(-3 * time.Hour)},
		{ID: 103, GUID: "g2", Event: "pull_request", Action: "closed", Status: 0, At: now.Add(-4 * time.Hour)},
		{ID: 102, GUID: "g1", Event: "push", Status: 200, At: now.Add(-5 * time.Hour)},
		{ID: 101, GUID: "g5", Event: "push", Status: 500, At: now.Add(-50 * time.Hour)},
	}
}

func TestGitHub_FeedsMissedDeliveriesOnceAndASecondRunNothing(t *testing.T) {
	t.Parallel()
	ctx, db, inbox, handled := setupGitHub(t)
	now := time.Now()
	fake := newFakeGitHub(t, 2, gitHubDeliveries(now))
	// g1 and g4 reached the receiver as webhooks.
	for _, d := range []string{"g1", "g4"} {
		if _, err := inbox.Receive(ctx, hookinbox.Event{Endpoint: "gh", ID: d, Type: "push", Payload: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	*handled = nil
	src, err := backfill.NewGitHub(fake.client(t), backfill.GitHubConfig{Owner: "acme", Repo: "app", HookID: 7, Since: now.Add(-24 * time.Hour), PageSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	res, err := backfill.Run(ctx, inbox, inbox.Driver().Executor(), src, &backfill.Config{Endpoint: "gh"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(*handled, ", "); got != "issues.opened g3, pull_request.closed g2" {
		t.Fatalf("handled %q, want g3 once (its redelivery too is g3) and g2, under the provider's types", got)
	}
	if res.Counts[hookinbox.OutcomeProcessed] != 2 || res.Counts[hookinbox.OutcomeDuplicate] != 2 || !res.Done {
		t.Fatalf("outcomes %v (done %t), want 2 processed, g1 and g4 duplicates", res.Counts, res.Done)
	}
	var origin string
	if err := db.Pool.QueryRow(ctx, `SELECT coalesce(origin, '') FROM hookinbox_inbox WHERE event_id = 'g2'`).Scan(&origin); err != nil || origin != backfill.Origin {
		t.Fatalf("g2 origin %q (%v), want backfill", origin, err)
	}
	// g5 is older than Since: listed on the third page, never fetched.
	if fake.fetched[101] != 0 {
		t.Fatal("a delivery older than Since was fetched")
	}

	*handled = nil
	src, _ = backfill.NewGitHub(fake.client(t), backfill.GitHubConfig{Owner: "acme", Repo: "app", HookID: 7, Since: now.Add(-24 * time.Hour), PageSize: 2})
	again, err := backfill.Run(ctx, inbox, inbox.Driver().Executor(), src, &backfill.Config{Endpoint: "gh"})
	if err != nil {
		t.Fatal(err)
	}
	if len(*handled) != 0 || again.Counts[hookinbox.OutcomeProcessed] != 0 {
		t.Fatalf("second run handled %v (%v), want nothing", *handled, again.Counts)
	}
}

// With FailedOnly only the deliveries GitHub recorded as failed are fetched; a run
// cancelled after the first resumes on the same page after it.
func TestGitHub_FailedOnlyAndResume(t *testing.T) {
	t.Parallel()
	ctx, _, inbox, handled := setupGitHub(t)
	now := time.Now()
	fake := newFakeGitHub(t, 3, gitHubDeliveries(now))
	cfg := backfill.GitHubConfig{Owner: "acme", Repo: "app", HookID: 7, FailedOnly: true, PageSize: 3}
	src, _ := backfill.NewGitHub(fake.client(t), cfg)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	_, err := backfill.Run(cctx, inbox, inbox.Driver().Executor(), src, &backfill.Config{Endpoint: "gh", ProgressFunc: func(p backfill.Progress) {
		if p.Fed == 1 {
			cancel()
		}
	}})
	if err == nil {
		t.Fatal("cancelled run returned no error")
	}
	src, _ = backfill.NewGitHub(fake.client(t), cfg)
	res, err := backfill.Run(ctx, inbox, inbox.Driver().Executor(), src, &backfill.Config{Endpoint: "gh"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Resumed {
		t.Fatal("second run did not resume")
	}
	if got := strings.Join(*handled, ", "); got != "issues.opened g3, pull_request.closed g2, push g5" {
		t.Fatalf("handled %q, want each failed GUID once", got)
	}
	// The successful deliveries g4 and g1 are never fetched.
	if fake.fetched[105] != 0 || fake.fetched[102] != 0 {
		t.Fatalf("fetched successful deliveries: %v", fake.fetched)
	}
	if fake.fetched[106] != 1 {
		t.Fatalf("delivery 106, fed before the cancel, fetched %d times", fake.fetched[106])
	}
	if fake.lists[len(fake.lists)-2] != "" {
		// The resumed run asks for the first page again (it stopped in it) and skips
		// what it fed: its requests are the first page, then the second.
		t.Fatalf("list requests %q: the resumed run did not start on the page it stopped in", fake.lists)
	}
}
