package provider_test

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/hookinbox/hookinbox/provider"
)

// FuzzHMACHeader checks that nothing verifies that was not signed: whenever the
// timestamped generic scheme accepts, the signature header is the prefix and the hex
// HMAC of the timestamp as sent, a dot and the body.
func FuzzHMACHeader(f *testing.F) {
	body := []byte(`{"id":"e1","type":"t1"}`)
	ts := strconv.FormatInt(testNow.Unix(), 10)
	good := "sha256=" + hexMAC(sha256.New, fuzzSecret, []byte(ts+"."), body)
	f.Add(ts, good, body)
	f.Add(ts, strings.ToUpper(good), body)
	f.Add(ts, "sha256="+strings.ToUpper(good[7:]), body)
	f.Add(ts, good[7:], body)
	f.Add(ts, good[:30], body)
	f.Add("0"+ts, good, body)
	f.Add("", good, body)
	f.Add(ts, "sha256=", []byte(nil))

	v := newTestHMAC(f, hmacTimestamped, fuzzSecret)
	f.Fuzz(func(t *testing.T, ts, sig string, body []byte) {
		h := http.Header{}
		h.Set("X-Timestamp", ts)
		h.Set("X-Signature", sig)
		got, err := v.Verify(h, body)
		if err != nil {
			checkSentinel(t, err)
			return
		}
		want := "sha256=" + hexMAC(sha256.New, fuzzSecret, []byte(ts+"."), body)
		if "sha256="+strings.ToLower(strings.TrimPrefix(sig, "sha256=")) != want || !strings.HasPrefix(sig, "sha256=") {
			t.Fatalf("accepted signature %q for timestamp %q, want %s", sig, ts, want)
		}
		if got.Timestamp.Sub(testNow).Abs() > provider.DefaultTolerance {
			t.Fatalf("accepted timestamp %q, %s from now", ts, got.Timestamp.Sub(testNow))
		}
		if got.ID == "" || got.Type == "" || string(got.Body) != string(body) {
			t.Fatalf("Verify = %+v", got)
		}
	})
}

// FuzzHMACEvent checks the id and type read through dot paths from correctly signed
// bodies against an independent reading of the body.
func FuzzHMACEvent(f *testing.F) {
	f.Add([]byte(`{"data":{"object":{"id":"obj_1"}},"type":"t"}`))
	f.Add([]byte(`{"data":{"object":{"id":820982911946154508}},"type":"t"}`))
	f.Add([]byte(`{"data":{"object":{"id":-1.5e3}},"type":"t"}`))
	f.Add([]byte(`{"data":{"object":{"id":null}},"type":"t"}`))
	f.Add([]byte(`{"data":{"object":[]},"type":"t"}`))
	f.Add([]byte(`{"data":"x","type":"t"}`))
	f.Add([]byte(`{"data":{"object":{"id":"a","id":""}},"type":"t"}`))
	f.Add([]byte(`{"data.object.id":"flat","type":"t"}`))

	v := newTestHMAC(f, map[string]string{"header": "X-Signature", "id_field": "data.object.id"}, fuzzSecret)
	f.Fuzz(func(t *testing.T, body []byte) {
		h := http.Header{}
		h.Set("X-Signature", hexMAC(sha256.New, fuzzSecret, body))
		got, err := v.Verify(h, body)
		if err != nil {
			if !errors.Is(err, provider.ErrUnparsableEvent) {
				t.Fatalf("signed body refused with %v", err)
			}
			return
		}

		var fields map[string]any
		d := json.NewDecoder(strings.NewReader(string(body)))
		d.UseNumber()
		if err := d.Decode(&fields); err != nil || fields == nil {
			t.Fatalf("accepted a body that is not a JSON object")
		}
		data, _ := fields["data"].(map[string]any)
		object, _ := data["object"].(map[string]any)
		var wantID string
		switch id := object["id"].(type) {
		case string:
			wantID = id
		case json.Number:
			wantID = id.String()
		}
		wantType, _ := fields["type"].(string)
		if got.ID != wantID || got.Type != wantType || wantID == "" || wantType == "" {
			t.Fatalf("ID, Type = %q, %q, want %q, %q", got.ID, got.Type, wantID, wantType)
		}
	})
}
