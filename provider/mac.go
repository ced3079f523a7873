package provider

import (
	"crypto/hmac"
	"encoding/base64"
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
