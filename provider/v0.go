package provider

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// v0Scheme is the signature scheme Slack and Zoom share under their own header
// names: one header carries "v0=" and the hex HMAC-SHA256 of "v0:<ts>:<body>", the
// other the Unix timestamp ts, signed as sent.
type v0Scheme struct {
	scheme, signatureHeader, timestampHeader string
}

// verify returns the index of the secret whose signature the request carries and
// the signing time, or an error wrapping this package's sentinels. The timestamp is
// checked against now after the MAC, so that a tolerance error always means a
// genuine signature.
func (s v0Scheme) verify(h http.Header, body []byte, secrets [][]byte, now time.Time, tolerance time.Duration) (int, time.Time, error) {
	sig, ts, signedAt, err := signatureAndTimestamp(h, s.scheme, s.signatureHeader, s.timestampHeader)
	if err != nil {
		return -1, time.Time{}, err
	}
	version, digits, ok := strings.Cut(sig, "=")
	if !ok {
		return -1, time.Time{}, fmt.Errorf("%s: %s is not version=signature: %w", s.scheme, s.signatureHeader, ErrMalformedSignature)
	}
	if version != "v0" {
		return -1, time.Time{}, fmt.Errorf("%s: %s is not a v0 signature: %w", s.scheme, s.signatureHeader, ErrNoValidSignature)
	}
	mac, err := decodeHexDigest(s.scheme, s.signatureHeader, digits, sha256.Size)
	if err != nil {
		return -1, time.Time{}, err
	}
	// The timestamp is signed as sent, not reformatted: the basestring is built from
	// the header's text.
	message := [][]byte{[]byte("v0:"), []byte(ts), []byte(":"), body}
	index := matchMAC(secrets, sha256.New, message, nil, [][]byte{mac})
	if index < 0 {
		return -1, time.Time{}, fmt.Errorf("%s: signature matches none of %d secrets: %w", s.scheme, len(secrets), ErrNoValidSignature)
	}
	if err := checkSkew(s.scheme, now, signedAt, tolerance); err != nil {
		return -1, time.Time{}, err
	}
	return index, signedAt, nil
}
