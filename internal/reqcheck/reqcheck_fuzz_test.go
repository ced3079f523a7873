package reqcheck

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// jsonMediaType is an independent reading of "a JSON media type": the type and
// subtype before any parameter, case-insensitive, application/json or
// application/<token>+json, a token being printable ASCII without RFC 2045's
// tspecials.
var jsonMediaType = regexp.MustCompile(`^application/([^\x00-\x20\x7f-\x{10FFFF}()<>@,;:\\"/\[\]?=]*\+)?json$`)

// FuzzRepresentation checks that whatever Representation lets through names a JSON
// media type (or none) and no content coding but identity.
func FuzzRepresentation(f *testing.F) {
	for _, seed := range [][2]string{
		{"application/json", ""},
		{"application/json; charset=utf-8", ""},
		{"APPLICATION/JSON ; charset=\"utf-8\"", "identity"},
		{"application/cloudevents+json", ""},
		{"application/+json", ""},
		{"text/plain", ""},
		{"application/x-www-form-urlencoded", ""},
		{"application/json; ;;==", ""},
		{"application/jsonx", ""},
		{"", "gzip"},
		{"", "identity, gzip"},
		{"", " , identity"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, contentType, contentEncoding string) {
		h := http.Header{}
		if contentType != "" {
			h["Content-Type"] = []string{contentType}
		}
		if contentEncoding != "" {
			h["Content-Encoding"] = []string{contentEncoding}
		}
		if Representation(h, nil) != "" {
			return
		}
		for _, c := range strings.Split(contentEncoding, ",") {
			if c = strings.TrimSpace(c); c != "" && !strings.EqualFold(c, "identity") {
				t.Fatalf("accepted Content-Encoding %q", contentEncoding)
			}
		}
		if contentType == "" {
			return
		}
		mt, _, _ := strings.Cut(contentType, ";")
		if !jsonMediaType.MatchString(strings.ToLower(strings.TrimSpace(mt))) {
			t.Fatalf("accepted Content-Type %q", contentType)
		}
	})
}

// FuzzKeyText checks KeyText against a byte-level reading: valid UTF-8, no C0
// control, no DEL, no C1 control (U+0080–U+009F), both ways.
func FuzzKeyText(f *testing.F) {
	for _, seed := range []string{
		"evt_1NfR2x2eZvKYlo2C", "72d3162e-cc78-11e3-81ab-4c9367dc0958", "délivery-ü-日本",
		"", "evt\x00", "evt\t1", "evt\n", "evt\x7f", "evt\u0085", "evt\u009b[2J", "evt\xff", "\xc3",
		"evt\u2028", "evt\ufeff",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := utf8.ValidString(s)
		for _, r := range s {
			if r < 0x20 || r >= 0x7f && r <= 0x9f {
				want = false
			}
		}
		if got := KeyText(s); got != want {
			t.Fatalf("KeyText(%q) = %v, want %v", s, got, want)
		}
	})
}
