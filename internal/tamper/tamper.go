// Package tamper changes a signed request in the smallest ways a verifier must
// notice: a body re-serialized or with one byte changed, a signature with its last
// digit changed. The tests of package provider and the test-only module
// internal/oracle build their refusals with it.
package tamper

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Reserialized returns body decoded and encoded again by encoding/json: the same
// JSON value, other bytes. It panics if the bytes come out the same: give the body
// irregular spacing.
func Reserialized(body []byte) []byte {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		panic(err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	if bytes.Equal(out, body) {
		panic("re-serializing did not change the body; give it irregular spacing")
	}
	return out
}

// OneByteChanged returns body with the first byte of marker's first occurrence
// replaced. It panics if marker is not in body.
func OneByteChanged(body []byte, marker string) []byte {
	out := bytes.Clone(body)
	i := bytes.Index(out, []byte(marker))
	if i < 0 {
		panic("marker not in body")
	}
	out[i] ^= 0x20
	return out
}

// LastHexChanged returns hex digits s with the last one changed, so that only a
// full-length comparison tells the two apart.
func LastHexChanged(s string) string {
	if s[len(s)-1] == '0' {
		return s[:len(s)-1] + "1"
	}
	return s[:len(s)-1] + "0"
}

// LastBase64Changed returns padded base64 s with its last significant character
// changed and the encoding still canonical. That character's low bits are zero padding
// for digests of 32 and 64 bytes, so it is one of A, Q, g, w; swapping A and Q changes
// a data bit.
func LastBase64Changed(s string) string {
	i := len(strings.TrimRight(s, "=")) - 1
	c := byte('A')
	if s[i] == 'A' {
		c = 'Q'
	}
	return s[:i] + string(c) + s[i+1:]
}
