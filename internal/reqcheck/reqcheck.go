// Package reqcheck holds the checks an endpoint makes on the parts of a request that
// no signature covers, or that a signature covers but no store should keep: the
// representation headers, and the text of an event's id and type.
package reqcheck

import (
	"mime"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Representation refuses, before the body is read, a request whose body could
// not be the JSON a provider signs: a Content-Type that names another media type, or
// a Content-Encoding. A compressed body is never inflated (a gzip bomb costs nothing
// to refuse), and no provider compresses its webhooks. A request without a
// Content-Type is accepted: the body must be a JSON object anyway. A scheme whose
// bodies are not JSON names its media types in also (Twilio's form-encoded
// callbacks). It returns the reason, "" when the request may be read.
func Representation(h http.Header, also []string) string {
	for _, ce := range h.Values("Content-Encoding") {
		for _, coding := range strings.Split(ce, ",") {
			if c := strings.TrimSpace(coding); c != "" && !strings.EqualFold(c, "identity") {
				return "content encoding not supported: send the body uncompressed"
			}
		}
	}
	cts := h.Values("Content-Type")
	switch {
	case len(cts) == 0:
		return ""
	case len(cts) > 1:
		return "more than one Content-Type"
	}
	mt, _, err := mime.ParseMediaType(cts[0])
	if err != nil {
		return "malformed Content-Type"
	}
	if mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")) {
		return ""
	}
	for _, other := range also {
		if mt == other {
			return ""
		}
	}
	if len(also) > 0 {
		return "content type not supported: want application/json or " + strings.Join(also, ", ")
	}
	return "content type not supported: want application/json"
}

// KeyText reports whether s, an event's id or type, can be part of a receipt's
// key: valid UTF-8 without control characters. No provider sends others, and one that
// reached the database would be refused there (NUL) or shown garbled by every
// operator command (line breaks, escapes).
func KeyText(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}
