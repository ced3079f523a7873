package hookinbox

import (
	"bytes"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The record's bounds: a header value is cut at maxHeaderValue bytes, and headers
// stop being added once they hold maxHeaderBytes, so a request's headers cannot
// bloat its row.
const (
	maxHeaderValue = 512
	maxHeaderBytes = 4096
)

// credentialHeader reports whether a header may carry a credential rather than a
// signature: a bearer or basic token, a cookie, a shared secret sent as is (GitLab's
// X-Gitlab-Token), an API key. Such headers are never recorded.
func credentialHeader(name string) bool {
	var buf [64]byte // lower-cased on the stack: this runs for every header of every request
	n := buf[:0]
	if len(name) > len(buf) {
		n = nil
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= utf8.RuneSelf {
			// Not a name net/http lets through; Unicode's lower case (the Kelvin sign
			// is a k) decides, as for any other name.
			return credentialName([]byte(strings.ToLower(name)))
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		n = append(n, c)
	}
	return credentialName(n)
}

// credentialName is credentialHeader's test of a lower-cased name.
func credentialName(n []byte) bool {
	if string(n) == "authorization" || string(n) == "proxy-authorization" || string(n) == "cookie" {
		return true
	}
	for _, s := range credentialWords {
		if bytes.Contains(n, s) {
			return true
		}
	}
	return false
}

// credentialWords are the parts of a header's name that mark it as a credential.
var credentialWords = [][]byte{[]byte("token"), []byte("secret"), []byte("password"), []byte("api-key"), []byte("apikey"), []byte("api_key")}

// recordRequest returns the record of r as JSON, or nil when the inbox keeps none
// (Config.OmitRequestRecord). secretSlot is the index of the secret that verified the
// request, -1 when none says. The JSON is the bytes encoding/json writes for the
// record's hookinboxtype.RequestRecord (a test holds the two equal), written without
// reflection: BenchmarkRecordRequest takes 1.4 µs so, 5.0 µs with encoding/json.
func (i *Inbox[TTx]) recordRequest(r *http.Request, secretSlot int) []byte {
	if i.omitRequestRecord {
		return nil
	}
	names := make([]string, 0, len(r.Header))
	for name := range r.Header {
		if !credentialHeader(name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	b := make([]byte, 0, 256+64*len(names))
	b = append(b, `{"method":`...)
	b = appendJSONString(b, r.Method)
	b = append(b, `,"path":`...)
	b = appendJSONString(b, r.URL.Path)
	b = append(b, `,"remote_addr":`...)
	b = appendJSONString(b, r.RemoteAddr)
	b = append(b, `,"content_length":`...)
	b = strconv.AppendInt(b, r.ContentLength, 10)
	if secretSlot >= 0 {
		b = append(b, `,"secret_slot":`...)
		b = strconv.AppendInt(b, int64(secretSlot), 10)
	}
	b = append(b, `,"headers":{`...)
	size, first := 0, true
	for _, name := range names {
		open := false
		for _, v := range r.Header[name] {
			v = storableText(v, maxHeaderValue)
			if size += len(name) + len(v); size > maxHeaderBytes {
				break
			}
			if !open { // the name's first value kept: the name opens its list
				if !first {
					b = append(b, ',')
				}
				b = appendJSONString(b, name)
				b = append(b, ':', '[')
				open, first = true, false
			} else {
				b = append(b, ',')
			}
			b = appendJSONString(b, v)
		}
		if open {
			b = append(b, ']')
		}
	}
	return append(b, "}}"...)
}

// appendJSONString appends s as a JSON string, escaped as encoding/json escapes it
// (HTML characters and U+2028/U+2029 too; invalid UTF-8 becomes U+FFFD).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// storableText is s cut at n bytes, as valid UTF-8 without NUL: what a JSON column
// stores (PostgreSQL's jsonb refuses \u0000).
func storableText(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\ufffd")
	}
	return strings.ReplaceAll(s, "\x00", "")
}
