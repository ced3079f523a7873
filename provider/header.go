package provider

import (
	"fmt"
	"net/http"
)

// maxHeaderLen bounds every header a verifier reads. Real signature, id and type
// headers are well under a kilobyte; anything near this size is an attempt to make us
// do work.
const maxHeaderLen = 8 << 10

// headerValue returns the value of the header name, or "" if it is absent or empty. A
// header sent more than once, or longer than maxHeaderLen, is refused with an error
// wrapping sentinel: picking one of several copies would let whoever added the others
// choose which one is checked. The error names the header, never its value.
func headerValue(h http.Header, scheme, name string, sentinel error) (string, error) {
	values := h.Values(name)
	switch {
	case len(values) == 0:
		return "", nil
	case len(values) > 1:
		return "", fmt.Errorf("%s: %d %s headers, want 1: %w", scheme, len(values), name, sentinel)
	case len(values[0]) > maxHeaderLen:
		return "", fmt.Errorf("%s: %s header is %d bytes, limit %d: %w",
			scheme, name, len(values[0]), maxHeaderLen, sentinel)
	}
	return values[0], nil
}
