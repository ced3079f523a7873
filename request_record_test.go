package hookinbox_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox"
	"github.com/hookinbox/hookinbox/driver/pgxdriver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
	"github.com/hookinbox/hookinbox/provider"
)

// TestEndpoint_ReceiptRecordsItsRequestWithoutCredentials: a delivery's receipt keeps
// its method, path, remote address, secret slot and headers, but no header that may
// carry a credential; a library configured with OmitRequestRecord keeps none.
func TestEndpoint_ReceiptRecordsItsRequestWithoutCredentials(t *testing.T) {
	t.Parallel()
	for _, omit := range []bool{false, true} {
		b := setup(t)
		inbox := b.inbox
		if omit {
			v, err := provider.NewStripe(provider.StripeConfig{Secrets: []string{testSecret}})
			if err != nil {
				t.Fatal(err)
			}
			if inbox, err = hookinbox.New(pgxdriver.New(b.db.Pool), &hookinbox.Config{
				Endpoints:         []hookinbox.EndpointConfig{{Name: epAsync, Verifier: v, Mode: hookinbox.ModeAsync}},
				Logger:            testLoggerTo(t, nil),
				OmitRequestRecord: true,
			}); err != nil {
				t.Fatal(err)
			}
		}
		mux := http.NewServeMux()
		mux.Handle("/"+epAsync, inbox.Endpoint(epAsync))
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		payload := invoiceEvent(epAsync, "evt_req", "invoice.paid", "in_1", 1).Payload
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/"+epAsync, bytes.NewReader(payload))
		req.Header.Set("Stripe-Signature", signed(payload, testSecret, time.Now()))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("User-Agent", "Stripe/1.0 (+https://stripe.com/docs/webhooks)")
		req.Header.Set("Authorization", "Bearer canary-bearer")
		req.Header.Set("X-Gitlab-Token", "canary-shared-secret")
		req.Header.Set("X-Api-Key", "canary-api-key")
		req.Header.Set("X-Odd", "a\xffb") // not UTF-8: recorded as U+FFFD
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("delivery: %d", resp.StatusCode)
		}
		d, err := pgxdriver.New(b.db.Pool).Executor().ConsoleReceiptDetail(b.ctx, hookinboxtype.Key{Provider: "stripe", Endpoint: epAsync, EventID: "evt_req"})
		if err != nil || d == nil {
			t.Fatalf("detail: %v %v", d, err)
		}
		if omit {
			if d.Request != nil {
				t.Fatalf("OmitRequestRecord kept %s", d.Request)
			}
			continue
		}
		var rec hookinboxtype.RequestRecord
		if err := json.Unmarshal(d.Request, &rec); err != nil {
			t.Fatalf("record %s: %v", d.Request, err)
		}
		if rec.Method != http.MethodPost || rec.RemoteAddr == "" || rec.SecretSlot == nil || *rec.SecretSlot != 0 || rec.Headers["Stripe-Signature"] == nil ||
			!strings.HasPrefix(rec.Headers["User-Agent"][0], "Stripe/1.0") {
			t.Errorf("record %s lacks the signature header, the user agent or the secret slot", d.Request)
		}
		for _, canary := range []string{"canary-bearer", "canary-shared-secret", "canary-api-key"} {
			if strings.Contains(string(d.Request), canary) {
				t.Errorf("record %s holds %q", d.Request, canary)
			}
		}
	}
}
