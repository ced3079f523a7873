package hookinboxtest_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/hookinboxtest"
)

// Linear has no Go library: the signature is checked against its definition.
func TestLinear_SignsTheBody(t *testing.T) {
	t.Parallel()

	body := []byte(`{"action":"create","type":"Issue","webhookTimestamp":1700000000000}`)
	h, err := hookinboxtest.Linear("lin_wh_secret").SignEvent(body, time.Now(), "d-1", "Issue.create")
	if err != nil {
		t.Fatal(err)
	}
	mac := hmac.New(sha256.New, []byte("lin_wh_secret"))
	mac.Write(body)
	if h.Get("Linear-Signature") != hex.EncodeToString(mac.Sum(nil)) || h.Get("Linear-Delivery") != "d-1" || h.Get("Linear-Event") != "Issue" {
		t.Errorf("headers %v", h)
	}
	if _, err := hookinboxtest.Linear("s").Sign(body, time.Now()); err == nil {
		t.Error("Sign of a body without an id: no error")
	}
}
