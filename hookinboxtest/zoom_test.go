package hookinboxtest_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/hookinboxtest"
)

// Zoom has no Go library: the signature is checked against its definition.
func TestZoom_SignsTimestampAndBody(t *testing.T) {
	t.Parallel()

	body := []byte(`{"event":"meeting.started","event_ts":1,"payload":{}}`)
	at := time.Unix(1700000000, 0)
	h, err := hookinboxtest.Zoom("zoom_secret").Sign(body, at)
	if err != nil {
		t.Fatal(err)
	}
	mac := hmac.New(sha256.New, []byte("zoom_secret"))
	mac.Write([]byte("v0:" + strconv.FormatInt(at.Unix(), 10) + ":"))
	mac.Write(body)
	if h.Get("x-zm-signature") != "v0="+hex.EncodeToString(mac.Sum(nil)) || h.Get("x-zm-request-timestamp") != "1700000000" {
		t.Errorf("headers %v", h)
	}
}
