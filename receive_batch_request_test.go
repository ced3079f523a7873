package hookinbox_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/driver/pgxdriver"
	"github.com/hookinbox/hookinbox/hookinboxtest"
	"github.com/hookinbox/hookinbox/hookinboxtype"
	"github.com/hookinbox/hookinbox/internal/testdb"
	"github.com/hookinbox/hookinbox/provider"
)

// arrayVerifier is a batch scheme for these tests: an HMAC-SHA256 of the body in
// X-Test-Signature, the body a JSON array of events with an id and a type, as
// SendGrid's event webhook posts them.
type arrayVerifier struct{ secret []byte }

func (v arrayVerifier) Name() string               { return "testarray" }
func (v arrayVerifier) RetryWindow() time.Duration { return 72 * time.Hour }
func (v arrayVerifier) mac(body []byte) []byte {
	m := hmac.New(sha256.New, v.secret)
	m.Write(body)
	return m.Sum(nil)
}
func (v arrayVerifier) sign(body []byte) string { return hex.EncodeToString(v.mac(body)) }
func (v arrayVerifier) Verify(http.Header, []byte) (provider.Verified, error) {
	return provider.Verified{}, errors.New("a batch scheme: VerifyBatch")
}

func (v arrayVerifier) VerifyBatch(h http.Header, body []byte) ([]provider.Verified, error) {
	got, err := hex.DecodeString(h.Get("X-Test-Signature"))
	if err != nil || !hmac.Equal(got, v.mac(body)) {
		return nil, fmt.Errorf("%w: no match", provider.ErrNoValidSignature)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(body, &items); err != nil {
		return nil, fmt.Errorf("%w: %v", provider.ErrUnparsableEvent, err)
	}
	out := make([]provider.Verified, len(items))
	for k, item := range items {
		var e struct{ ID, Type string }
		if err := json.Unmarshal(item, &e); err != nil || e.ID == "" || e.Type == "" {
			return nil, fmt.Errorf("%w: item %d has no id or type", provider.ErrUnparsableEvent, k)
		}
		out[k] = provider.Verified{ID: e.ID, Type: e.Type, Body: item}
	}
	return out, nil
}

type arrayBundle struct {
	*testBundle
	v     arrayVerifier
	mu    sync.Mutex
	fail  map[string]bool
	srv   *httptest.Server
	modes map[string]hookinbox.Mode
}

// setupArray is an inbox with a batch endpoint per mode; the handler of "thing.done"
// records each application and fails for the ids in fail.
func setupArray(t *testing.T) *arrayBundle {
	t.Helper()
	db := testdb.New(t, testdb.Options{MaxConns: 8})
	ctx := context.Background()
	a := &arrayBundle{v: arrayVerifier{secret: []byte("batch-secret")}, fail: map[string]bool{}}
	inbox, err := hookinbox.New(pgxdriver.New(db.Pool), &hookinbox.Config{
		Endpoints: []hookinbox.EndpointConfig{
			{Name: "array_async", Verifier: a.v, Mode: hookinbox.ModeAsync},
			{Name: "array_sync", Verifier: a.v, Mode: hookinbox.ModeSync},
			{Name: "array_hybrid", Verifier: a.v, Mode: hookinbox.ModeHybrid},
		},
		Worker: hookinbox.WorkerConfig{RetryDelayFunc: func(int) time.Duration { return 0 }},
		Logger: testLoggerTo(t, nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := inbox.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool.Exec(ctx, `CREATE TABLE test_effects (id bigint GENERATED ALWAYS AS IDENTITY, event_id text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for _, ep := range []string{"array_async", "array_sync", "array_hybrid"} {
		inbox.Handle(ep, "thing.done", func(ctx context.Context, tx pgx.Tx, ev hookinbox.Event) error {
			if err := countingHandler(ctx, tx, ev); err != nil {
				return err
			}
			a.mu.Lock()
			defer a.mu.Unlock()
			if a.fail[ev.ID] {
				return errors.New("refused " + ev.ID)
			}
			return nil
		})
	}
	mux := http.NewServeMux()
	for _, ep := range []string{"array_async", "array_sync", "array_hybrid"} {
		mux.Handle("/"+ep, inbox.Endpoint(ep))
	}
	a.srv = httptest.NewServer(mux)
	t.Cleanup(a.srv.Close)
	a.testBundle = &testBundle{db: db, inbox: inbox, ctx: ctx}
	return a
}

type batchAnswer struct {
	status   int
	outcome  string
	events   int
	outcomes map[string]int
}

// post sends one signed request carrying items (each {"id","type"} plus the marker).
func (a *arrayBundle) post(t *testing.T, endpoint string, items ...[2]string) batchAnswer {
	t.Helper()
	var list []map[string]string
	for _, it := range items {
		list = append(list, map[string]string{"id": it[0], "type": it[1], "note": payloadMarker})
	}
	body, _ := json.Marshal(list)
	req, _ := http.NewRequest(http.MethodPost, a.srv.URL+"/"+endpoint, bytes.NewReader(body))
	req.Header.Set("X-Test-Signature", a.v.sign(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ans struct {
		Outcome  string         `json:"outcome"`
		Events   int            `json:"events"`
		Outcomes map[string]int `json:"outcomes"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&ans)
	return batchAnswer{resp.StatusCode, ans.Outcome, ans.Events, ans.Outcomes}
}

func (a *arrayBundle) receipts(t *testing.T, endpoint string) int {
	return a.count(t, `SELECT count(*) FROM hookinbox_inbox WHERE endpoint = $1`, endpoint)
}

// One request, several events: each its own receipt, written together, one answer;
// copies inside the request and the provider's retry of it are duplicates.
func TestBatchRequest_AsyncEachEventItsOwnReceipt(t *testing.T) {
	t.Parallel()
	a := setupArray(t)
	got := a.post(t, "array_async", [2]string{"e1", "thing.done"}, [2]string{"e2", "thing.done"},
		[2]string{"e1", "thing.done"}, [2]string{"e3", "thing.unknown"})
	if got.status != 200 || got.outcome != "batch" || got.events != 4 ||
		got.outcomes["accepted"] != 2 || got.outcomes["duplicate"] != 1 || got.outcomes["ignored"] != 1 {
		t.Fatalf("answer %+v", got)
	}
	if n := a.receipts(t, "array_async"); n != 3 {
		t.Fatalf("%d receipts, want 3", n)
	}
	if got := a.post(t, "array_async", [2]string{"e1", "thing.done"}, [2]string{"e2", "thing.done"}); got.status != 200 || got.outcomes["duplicate"] != 2 {
		t.Fatalf("the retry: %+v, want 2 duplicates", got)
	}
}

// A request with one unusable item, or a bad signature, writes nothing.
func TestBatchRequest_RefusedWholeWritesNothing(t *testing.T) {
	t.Parallel()
	a := setupArray(t)
	if got := a.post(t, "array_sync", [2]string{"e1", "thing.done"}, [2]string{"", "thing.done"}); got.status != 400 {
		t.Fatalf("an item with no id: %+v, want 400", got)
	}
	body := []byte(`[{"id":"e1","type":"thing.done"}]`)
	req, _ := http.NewRequest(http.MethodPost, a.srv.URL+"/array_async", bytes.NewReader(body))
	req.Header.Set("X-Test-Signature", a.v.sign([]byte("other")))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("bad signature: %d, want 401", resp.StatusCode)
	}
	if n := a.count(t, `SELECT count(*) FROM hookinbox_inbox`); n != 0 {
		t.Fatalf("%d receipts written", n)
	}
}

// On a sync endpoint, an event whose handler fails is rolled back alone and the
// request answered 500; the retry of the whole request finds the others committed
// (duplicates) and processes the failed one once it succeeds. Nothing is applied twice.
func TestBatchRequest_SyncFailureAnswers500AndTheRetryCompletes(t *testing.T) {
	t.Parallel()
	a := setupArray(t)
	a.fail["e2"] = true
	items := [][2]string{{"e1", "thing.done"}, {"e2", "thing.done"}, {"e3", "thing.done"}}
	if got := a.post(t, "array_sync", items...); got.status != 500 {
		t.Fatalf("a failing event: %+v, want 500", got)
	}
	if n := a.receipts(t, "array_sync"); n != 2 || a.effects(t, "e2") != 0 {
		t.Fatalf("%d receipts and %d effects of e2, want the 2 others and none", n, a.effects(t, "e2"))
	}
	a.mu.Lock()
	a.fail["e2"] = false
	a.mu.Unlock()
	got := a.post(t, "array_sync", items...)
	if got.status != 200 || got.outcomes["duplicate"] != 2 || got.outcomes["processed"] != 1 {
		t.Fatalf("the retry: %+v, want 2 duplicates and 1 processed", got)
	}
	for _, id := range []string{"e1", "e2", "e3"} {
		if n := a.effects(t, id); n != 1 {
			t.Errorf("%s applied %d times", id, n)
		}
	}
}

// On a hybrid endpoint the failed event is kept pending for the workers, and the
// request answered 200.
func TestBatchRequest_HybridFailureKeptPending(t *testing.T) {
	t.Parallel()
	a := setupArray(t)
	a.fail["e2"] = true
	got := a.post(t, "array_hybrid", [2]string{"e1", "thing.done"}, [2]string{"e2", "thing.done"}, [2]string{"e9", "thing.unknown"})
	if got.status != 200 || got.outcomes["processed"] != 1 || got.outcomes["accepted"] != 1 || got.outcomes["ignored"] != 1 {
		t.Fatalf("answer %+v", got)
	}
	r := a.receipt(t, "array_hybrid", "e2")
	if r == nil || r.State != hookinboxtype.StatePending || r.Attempts != 1 {
		t.Fatalf("e2's receipt %+v, want pending after 1 attempt", r)
	}
}

func (a *arrayBundle) receipt(t *testing.T, endpoint, id string) *hookinboxtype.Receipt {
	t.Helper()
	r, err := a.inbox.Operator().GetReceipt(a.ctx, hookinboxtype.Key{Provider: "testarray", Endpoint: endpoint, EventID: id})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// batchAck receives a batch and says whether the request is acknowledged (2xx).
type batchAck func(ctx context.Context, inbox *hookinbox.Inbox[pgx.Tx], evs []hookinbox.Event) bool

// ackReal acknowledges only a batch ReceiveBatch committed whole, as serveBatch does.
func ackReal(ctx context.Context, inbox *hookinbox.Inbox[pgx.Tx], evs []hookinbox.Event) bool {
	_, err := inbox.ReceiveBatch(ctx, evs)
	return err == nil
}

// ackWhenSomethingCommitted is the broken variant: it acknowledges a batch in which
// anything committed, so the provider never retries the event that failed.
func ackWhenSomethingCommitted(ctx context.Context, inbox *hookinbox.Inbox[pgx.Tx], evs []hookinbox.Event) bool {
	outs, err := inbox.ReceiveBatch(ctx, evs)
	return err == nil || (errors.Is(err, hookinbox.ErrBatchIncomplete) && outs[0] != "")
}

// checkBatchAck: every event of an acknowledged request is committed. Returns the
// events lost.
func checkBatchAck(t *testing.T, ack batchAck) []string {
	t.Helper()
	a := setupArray(t)
	a.fail["e2"] = true
	var evs []hookinbox.Event
	for _, id := range []string{"e1", "e2", "e3"} {
		evs = append(evs, hookinbox.Event{Endpoint: "array_sync", ID: id, Type: "thing.done", Payload: []byte(`{"id":"` + id + `"}`)})
	}
	var lost []string
	if ack(a.ctx, a.inbox, evs) {
		for _, ev := range evs {
			if a.receipt(t, "array_sync", ev.ID) == nil {
				lost = append(lost, ev.ID)
			}
		}
	}
	return lost
}

func TestBatchAck_OnlyWhenEveryEventCommitted(t *testing.T) {
	t.Parallel()
	if lost := checkBatchAck(t, ackReal); len(lost) > 0 {
		t.Fatalf("acknowledged, yet %v not committed", lost)
	}
}

func TestBrokenBatchAck_LosesTheFailedEvent(t *testing.T) {
	t.Parallel()
	if lost := checkBatchAck(t, ackWhenSomethingCommitted); len(lost) == 0 {
		t.Fatal("the broken acknowledgement was not caught")
	}
}

// SendGrid's event webhook, as SendGrid posts it: several events in one signed POST,
// each its own receipt under its sg_event_id, one answer; the retry of the POST is all
// duplicates, and a POST of one event is answered as a single delivery.
func TestBatchRequest_SendGridEventArrays(t *testing.T) {
	t.Parallel()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	public, err := hookinboxtest.SendGridPublicKey(key)
	if err != nil {
		t.Fatal(err)
	}
	v, err := provider.NewSendGrid(provider.SendGridConfig{PublicKeys: []string{public}})
	if err != nil {
		t.Fatal(err)
	}
	db := testdb.New(t, testdb.Options{MaxConns: 4})
	ctx := context.Background()
	inbox, err := hookinbox.New(pgxdriver.New(db.Pool), &hookinbox.Config{
		Endpoints: []hookinbox.EndpointConfig{{Name: "email", Verifier: v, Mode: hookinbox.ModeAsync}},
		Logger:    testLoggerTo(t, nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := inbox.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	inbox.Handle("email", "*", func(context.Context, pgx.Tx, hookinbox.Event) error { return nil })
	srv := httptest.NewServer(inbox.Endpoint("email"))
	defer srv.Close()
	post := func(body string) (int, map[string]any) {
		t.Helper()
		req, err := hookinboxtest.NewRequest(srv.URL, hookinboxtest.SendGrid(key), []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var ans map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&ans)
		return resp.StatusCode, ans
	}
	events := `[{"event":"processed","sg_event_id":"sg-1","email":"` + payloadMarker + `@example.com"},
 {"event":"delivered","sg_event_id":"sg-2"},{"event":"open","sg_event_id":"sg-3"}]`
	if status, ans := post(events); status != 200 || ans["outcome"] != "batch" || ans["events"] != float64(3) {
		t.Fatalf("the POST of 3: %d %v", status, ans)
	}
	if status, ans := post(events); status != 200 || ans["outcomes"].(map[string]any)["duplicate"] != float64(3) {
		t.Fatalf("its retry: %d %v, want 3 duplicates", status, ans)
	}
	if status, ans := post(`[{"event":"click","sg_event_id":"sg-4"}]`); status != 200 || ans["outcome"] != "accepted" {
		t.Fatalf("a POST of one: %d %v, want accepted", status, ans)
	}
	var n int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM hookinbox_inbox WHERE provider = 'sendgrid' AND payload ? 'sg_event_id'`).Scan(&n); err != nil || n != 4 {
		t.Fatalf("%d receipts, each the event's own JSON, want 4 (%v)", n, err)
	}
}

// One item the database refuses (a JSON \u0000, which jsonb cannot hold) does not
// keep the others of the request out: the statement is split until it stands alone,
// the others are recorded, and the answer names the refusal (found by review).
func TestBatchRequest_AsyncRefusedItemIsIsolated(t *testing.T) {
	t.Parallel()
	a := setupArray(t)
	evs := []hookinbox.Event{
		{Endpoint: "array_async", ID: "e1", Type: "thing.done", Payload: []byte(`{"id":"e1"}`)},
		{Endpoint: "array_async", ID: "e2", Type: "thing.done", Payload: []byte(`{"id":"e2","note":"\u0000"}`)},
		{Endpoint: "array_async", ID: "e3", Type: "thing.done", Payload: []byte(`{"id":"e3"}`)},
		{Endpoint: "array_async", ID: "e2", Type: "thing.done", Payload: []byte(`{"id":"e2","note":"\u0000"}`)},
	}
	outs, err := a.inbox.ReceiveBatch(a.ctx, evs)
	var be *hookinbox.BatchError
	if !errors.As(err, &be) || !be.Refused() || len(be.Failed) != 2 || be.Failed[1] == nil || be.Failed[3] == nil {
		t.Fatalf("ReceiveBatch: %v, want events 1 and 3 refused", err)
	}
	if outs[0] != hookinbox.OutcomeAccepted || outs[2] != hookinbox.OutcomeAccepted {
		t.Fatalf("outcomes %v", outs)
	}
	if n := a.receipts(t, "array_async"); n != 2 {
		t.Fatalf("%d receipts, want e1 and e3", n)
	}
}

// When the shared transaction fails as a whole (here one handler's failure wraps a
// deadline, which fails the group), the events are received alone: the others commit,
// and on a hybrid endpoint the failed one is kept pending (found by review).
func TestBatchRequest_GroupFailureFallsBackToEachAlone(t *testing.T) {
	t.Parallel()
	a := setupArray(t)
	slow := func(context.Context, pgx.Tx, hookinbox.Event) error {
		return fmt.Errorf("its own lookup timed out: %w", context.DeadlineExceeded)
	}
	a.inbox.Handle("array_sync", "thing.slow", slow)
	a.inbox.Handle("array_hybrid", "thing.slow", slow)
	for _, ep := range []string{"array_sync", "array_hybrid"} {
		evs := []hookinbox.Event{
			{Endpoint: ep, ID: "e1", Type: "thing.done", Payload: []byte(`{"id":"e1"}`)},
			{Endpoint: ep, ID: "e2", Type: "thing.slow", Payload: []byte(`{"id":"e2"}`)},
			{Endpoint: ep, ID: "e3", Type: "thing.done", Payload: []byte(`{"id":"e3"}`)},
		}
		outs, err := a.inbox.ReceiveBatch(a.ctx, evs)
		n := a.receipts(t, ep)
		switch ep {
		case "array_sync":
			if !errors.Is(err, hookinbox.ErrBatchIncomplete) || n != 2 || outs[0] != hookinbox.OutcomeProcessed || outs[2] != hookinbox.OutcomeProcessed {
				t.Errorf("%s: %v, %v, %d receipts; want e1 and e3 processed, e2 failed", ep, outs, err, n)
			}
		case "array_hybrid":
			if err != nil || n != 3 || outs[1] != hookinbox.OutcomeAccepted {
				t.Errorf("%s: %v, %v, %d receipts; want e2 kept pending and no error", ep, outs, err, n)
			}
		}
	}
}

// More events than one shared transaction takes (Config.Sync's MaxBatch, 32) are
// received in several, each processed once.
func TestBatchRequest_SyncLargerThanOneTransaction(t *testing.T) {
	t.Parallel()
	a := setupArray(t)
	var items [][2]string
	for k := range 70 {
		items = append(items, [2]string{fmt.Sprintf("e%02d", k), "thing.done"})
	}
	if got := a.post(t, "array_sync", items...); got.status != 200 || got.outcomes["processed"] != 70 {
		t.Fatalf("answer %+v", got)
	}
	if n := a.count(t, `SELECT count(DISTINCT event_id) FROM test_effects`); n != 70 || a.count(t, `SELECT count(*) FROM test_effects`) != 70 {
		t.Fatalf("%d events applied, want each of 70 once", n)
	}
}

// A hybrid handler's error whose text the database cannot store as is (a NUL byte)
// is still a handler failure kept pending, never a refused payload (found by review).
func TestReceive_HybridErrorTextWithNULIsKeptPending(t *testing.T) {
	t.Parallel()
	a := setupArray(t)
	a.inbox.Handle("array_hybrid", "thing.nul", func(context.Context, pgx.Tx, hookinbox.Event) error {
		return errors.New("upstream said \x00 and \xff")
	})
	out, err := a.inbox.Receive(a.ctx, hookinbox.Event{Endpoint: "array_hybrid", ID: "n1", Type: "thing.nul", Payload: []byte(`{}`)})
	if err != nil || out != hookinbox.OutcomeAccepted {
		t.Fatalf("Receive: %s, %v; want accepted", out, err)
	}
	if r := a.receipt(t, "array_hybrid", "n1"); r == nil || r.State != hookinboxtype.StatePending || !strings.Contains(r.LastError, "upstream said") {
		t.Fatalf("receipt %+v", r)
	}
}

// Receive refuses what the HTTP path refuses: ids and types with control characters,
// payloads that are not UTF-8.
func TestReceive_KeysAreTextAndPayloadsUTF8(t *testing.T) {
	t.Parallel()
	a := setupArray(t)
	for _, ev := range []hookinbox.Event{
		{Endpoint: "array_async", ID: "a\nb", Type: "thing.done", Payload: []byte(`{}`)},
		{Endpoint: "array_async", ID: "ok", Type: "thing\x01", Payload: []byte(`{}`)},
		{Endpoint: "array_async", ID: "ok", Type: "thing.done", Payload: []byte("{\"a\":\"\xff\"}")},
	} {
		if _, err := a.inbox.Receive(a.ctx, ev); !errors.Is(err, hookinbox.ErrInvalidEvent) {
			t.Errorf("%q %q: %v, want ErrInvalidEvent", ev.ID, ev.Type, err)
		}
	}
	if n := a.count(t, `SELECT count(*) FROM hookinbox_inbox`); n != 0 {
		t.Fatalf("%d receipts written", n)
	}
}
