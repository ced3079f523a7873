package hookinbox

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// recordByEncodingJSON is the record as encoding/json writes it: the oracle that
// recordRequest's hand-written encoding must equal byte for byte.
func recordByEncodingJSON(r *http.Request, secretSlot int) []byte {
	rec := hookinboxtype.RequestRecord{Method: r.Method, Path: r.URL.Path, RemoteAddr: r.RemoteAddr, ContentLength: r.ContentLength,
		Headers: map[string][]string{}}
	if secretSlot >= 0 {
		rec.SecretSlot = &secretSlot
	}
	names := make([]string, 0, len(r.Header))
	for name := range r.Header {
		if !credentialHeader(name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	size := 0
	for _, name := range names {
		for _, v := range r.Header[name] {
			v = storableText(v, maxHeaderValue)
			if size += len(name) + len(v); size > maxHeaderBytes {
				break
			}
			rec.Headers[name] = append(rec.Headers[name], v)
		}
	}
	b, err := json.Marshal(rec)
	if err != nil {
		panic(err)
	}
	return b
}

func recordedRequest(method, path, remote string, contentLength int64, header http.Header) *http.Request {
	return &http.Request{Method: method, URL: &url.URL{Path: path}, RemoteAddr: remote, ContentLength: contentLength, Header: header}
}

// TestRecordRequest_WritesWhatEncodingJSONWrites: the hand-written record equals
// encoding/json's, on requests that hold every escape, credentials, no headers, the
// size bound and invalid UTF-8; a record of a request that may not be kept is nil.
func TestRecordRequest_WritesWhatEncodingJSONWrites(t *testing.T) {
	long := strings.Repeat("v", maxHeaderValue+10)
	many := http.Header{}
	for n := range 40 {
		many["X-H"+strings.Repeat("a", n)] = []string{strings.Repeat("b", 150), "second"}
	}
	cases := map[string]*http.Request{
		"plain": recordedRequest("POST", "/hooks/stripe", "10.0.0.1:5555", 1234, http.Header{
			"Content-Type": {"application/json"}, "Stripe-Signature": {"t=1,v1=ab"}, "Authorization": {"Bearer x"}}),
		"no headers": recordedRequest("POST", "/", "", -1, http.Header{}),
		"escapes": recordedRequest("POST", "/a\"b\\c<d>&e\u2028\u2029\x7f", "[::1]:1", 0, http.Header{
			"X-Esc": {"\b\f\n\r\t\x01\x1f\"\\<>&", "é日本\u2028", "a\xffb\x00c"}, "X-Empty": {}, "X-Blank": {""}}),
		"invalid utf-8 outside headers": recordedRequest("P\xffST", "/\xc3", "\xe2\x82", 1, nil),
		"long values":                   recordedRequest("POST", "/", "", 1, http.Header{"X-Long": {long, long}}),
		"size bound":                    recordedRequest("POST", "/", "", 1, many),
	}
	for name, r := range cases {
		for _, slot := range []int{-1, 0, 2} {
			got := (&Inbox[any]{}).recordRequest(r, slot)
			if want := recordByEncodingJSON(r, slot); !bytes.Equal(got, want) {
				t.Errorf("%s, slot %d:\n got %s\nwant %s", name, slot, got, want)
			}
		}
	}
	if got := (&Inbox[any]{omitRequestRecord: true}).recordRequest(cases["plain"], 0); got != nil {
		t.Errorf("OmitRequestRecord: got %s", got)
	}
}

// TestRecordRequest_TheOracleCatchesAWrongEscape: the comparison above fails for an
// encoder that leaves HTML characters as they are (encoding/json escapes them), so
// the equality it reports is not vacuous.
func TestRecordRequest_TheOracleCatchesAWrongEscape(t *testing.T) {
	r := recordedRequest("POST", "/a<b", "", 0, http.Header{})
	broken := bytes.ReplaceAll((&Inbox[any]{}).recordRequest(r, -1), []byte(`\u003c`), []byte("<"))
	if !json.Valid(broken) {
		t.Fatalf("the broken variant is not JSON: %s", broken)
	}
	if bytes.Equal(broken, recordByEncodingJSON(r, -1)) {
		t.Fatal("the oracle accepted a record whose escaping differs from encoding/json's")
	}
}

// FuzzRecordRequest: any method, path, address, header name and values give the
// bytes encoding/json gives.
func FuzzRecordRequest(f *testing.F) {
	f.Add("POST", "/hooks/x", "1.2.3.4:5", "X-A", "v", "w", int64(3), 1)
	f.Add("P\xff", "/\u2028<", "\x00", "K\"ey", "a\xffb\x00", "\\", int64(-1), -1)
	f.Fuzz(func(t *testing.T, method, path, remote, name, v1, v2 string, cl int64, slot int) {
		r := recordedRequest(method, path, remote, cl, http.Header{name: {v1, v2}, "Z": {v2}})
		slot = max(slot, -1)
		got := (&Inbox[any]{}).recordRequest(r, slot)
		if want := recordByEncodingJSON(r, slot); !bytes.Equal(got, want) {
			t.Fatalf("got %s\nwant %s", got, want)
		}
	})
}

// BenchmarkRecordRequest is a typical Stripe delivery's record.
func BenchmarkRecordRequest(b *testing.B) {
	r := recordedRequest("POST", "/hooks/stripe", "127.0.0.1:40000", 1200, http.Header{
		"Content-Type": {"application/json; charset=utf-8"}, "Stripe-Signature": {"t=1700000000,v1=" + strings.Repeat("ab", 32)},
		"User-Agent": {"Stripe/1.0 (+https://stripe.com/docs/webhooks)"}, "Accept": {"*/*; q=0.5, application/xml"},
		"Cache-Control": {"no-cache"}, "Content-Length": {"1200"}, "Accept-Encoding": {"gzip"}})
	inbox := &Inbox[any]{}
	b.Run("hand-written", func(b *testing.B) {
		for range b.N {
			inbox.recordRequest(r, 0)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for range b.N {
			recordByEncodingJSON(r, 0)
		}
	})
}

// credentialByLowerCase is the rule credentialHeader implements, written plainly.
func credentialByLowerCase(name string) bool {
	n := strings.ToLower(name)
	if n == "authorization" || n == "proxy-authorization" || n == "cookie" {
		return true
	}
	for _, s := range []string{"token", "secret", "password", "api-key", "apikey", "api_key"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// FuzzCredentialHeader: the stack-buffered test of a header's name agrees with the
// plain rule, for names shorter and longer than its buffer.
func FuzzCredentialHeader(f *testing.F) {
	for _, n := range []string{"Authorization", "COOKIE", "X-Gitlab-Token", "X-Api-Key", "X-" + strings.Repeat("a", 70) + "-Secret",
		strings.Repeat("A", 64) + "uthorization", "Stripe-Signature", "Proxy-Authorization", "X-API_KEY", "Tok\xffen", "X-To\u212Aen", "X-\u0130d"} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if got, want := credentialHeader(name), credentialByLowerCase(name); got != want {
			t.Fatalf("credentialHeader(%q) = %v, want %v", name, got, want)
		}
	})
}
