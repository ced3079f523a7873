package provider

import (
	"crypto/hmac"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
)

// matchMAC returns the index of the first key whose HMAC over the concatenation of
// message equals one of candidates, or -1.
//
// With encode nil the candidates are raw digests; otherwise each HMAC is encoded
// before the comparison. Comparing base64 text rather than decoding the candidate
// accepts exactly the canonical encoding the provider sends: Go's base64 decoder
// ignores line breaks and non-zero padding bits, so decoding would accept strings that
// the provider's own library refuses. Every comparison is constant time.
func matchMAC(keys [][]byte, newHash func() hash.Hash, message [][]byte, encode func([]byte) []byte, candidates [][]byte) int {
	for i, key := range keys {
		mac := hmac.New(newHash, key)
		for _, part := range message {
			mac.Write(part)
		}
		sum := mac.Sum(nil)
		if encode != nil {
			sum = encode(sum)
		}
		for _, c := range candidates {
			if hmac.Equal(sum, c) {
				return i
			}
		}
	}
	return -1
}

// base64Std encodes sum in standard, padded base64, for matchMAC.
func base64Std(sum []byte) []byte {
	return base64.StdEncoding.AppendEncode(nil, sum)
}

// decodeHexDigest decodes the hex digits of a signature, in either case, that must
// be a digest of size bytes. Digits of another count, or that are not hex, cannot
// equal any HMAC, so they are refused as no valid signature before any decoding; in
// particular a truncated signature never matches a prefix of the real one. name is the
// header, for the error.
func decodeHexDigest(scheme, name, digits string, size int) ([]byte, error) {
	if want := hex.EncodedLen(size); len(digits) != want {
		return nil, fmt.Errorf("%s: %s signature has %d hex digits, want %d: %w",
			scheme, name, len(digits), want, ErrNoValidSignature)
	}
	digest, err := hex.DecodeString(digits)
	if err != nil {
		return nil, fmt.Errorf("%s: %s signature is not hex: %w", scheme, name, ErrNoValidSignature)
	}
	return digest, nil
}
