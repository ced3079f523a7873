package provider_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hookinbox/hookinbox/provider"
)

// fuzzSecret signs the fuzz seeds, including those in testdata/fuzz.
const fuzzSecret = "whsec_fuzz"

var sentinels = []error{
	provider.ErrMissingSignature,
	provider.ErrMalformedSignature,
	provider.ErrNoValidSignature,
	provider.ErrTimestampOutOfTolerance,
	provider.ErrUnparsableEvent,
}

// checkSentinel fails t unless err wraps one of the package's sentinels.
func checkSentinel(t *testing.T, err error) {
	t.Helper()
	for _, sentinel := range sentinels {
		if errors.Is(err, sentinel) {
			return
		}
	}
	t.Fatalf("Verify error %v wraps no sentinel", err)
}

// FuzzStripeHeader checks that nothing verifies that was not signed: whenever Verify
// accepts, the header carries the v1 signature of the body for the accepted
// timestamp. (internal/oracle's FuzzStripeHeader checks that stripe-go accepts the
// same header.)
func FuzzStripeHeader(f *testing.F) {
	body := []byte(`{"id":"evt_1","type":"invoice.paid"}`)
	good := signatureHex(body, fuzzSecret, testNow)
	ts := fmt.Sprintf("t=%d", testNow.Unix())
	f.Add(ts+",v1="+good, body)
	f.Add(ts+",v1="+good[:32]+",v1="+good+",v0="+good, body)
	f.Add("v1="+good+","+ts, body)
	f.Add(ts+",v1="+strings.ToUpper(good), body)
	f.Add(ts+",v0="+good, body)
	f.Add(ts+","+ts+",v1="+good, body)
	f.Add("t=,v1=", []byte(nil))
	f.Add("", body)
	f.Add(",,=,", []byte("{}"))

	s := newFuzzStripe(f)
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		got, err := s.Verify(stripeHeader(header), body)
		if err != nil {
			checkSentinel(t, err)
			return
		}

		want := "v1=" + signatureHex(body, fuzzSecret, got.Timestamp)
		if !strings.Contains(strings.ToLower(header), want) {
			t.Fatalf("accepted header %q lacks %s", header, want)
		}
		if got.ID == "" || got.Type == "" || got.SecretIndex != 0 || string(got.Body) != string(body) {
			t.Fatalf("Verify = %+v", got)
		}
	})
}

// FuzzStripeEventBody checks that any correctly signed body is either refused as an
// unusable event or yields a non-empty id and type.
func FuzzStripeEventBody(f *testing.F) {
	f.Add([]byte(`{"id":"evt_1","type":"invoice.paid"}`))
	f.Add([]byte(`{"id":"evt_1","type":"invoice.paid","data":{"object":{"id":"in_1"}}}`))
	f.Add([]byte(`{"id":"","type":"x"}`))
	f.Add([]byte(`{"id":1,"type":"x"}`))
	f.Add([]byte(`{"id":"evt_1","id":"","type":"x"}`))
	f.Add([]byte(`{"ID":"evt_1","TYPE":"x"}`))
	f.Add([]byte(`{"id":"\u0000","type":"\ud800"}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`null`))
	f.Add([]byte(``))

	s := newFuzzStripe(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		header := signedHeader(body, fuzzSecret, testNow)
		got, err := s.Verify(stripeHeader(header), body)
		if err != nil {
			if !errors.Is(err, provider.ErrUnparsableEvent) {
				t.Fatalf("signed body refused with %v", err)
			}
			return
		}
		if got.ID == "" || got.Type == "" {
			t.Fatalf("Verify = %+v, want a non-empty ID and Type", got)
		}
	})
}

func newFuzzStripe(f *testing.F) *provider.Stripe {
	f.Helper()
	s, err := provider.NewStripe(provider.StripeConfig{
		Secrets: []string{fuzzSecret},
		NowFunc: func() time.Time { return testNow },
	})
	if err != nil {
		f.Fatal(err)
	}
	return s
}
