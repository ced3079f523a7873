package sign

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// HMACScheme describes a generic HMAC scheme, as the hmac provider's params do (the
// param names are in parentheses). Zero fields take the same defaults.
type HMACScheme struct {
	// Header carries the signature (header). Required.
	Header string
	// Prefix precedes the signature, e.g. "sha256=" (prefix). Defaults to none.
	Prefix string
	// Algorithm is "sha256" or "sha512" (algorithm). Defaults to "sha256".
	Algorithm string
	// Encoding is "hex" or "base64" (encoding). Defaults to "hex".
	Encoding string
	// TimestampHeader carries the signing time in Unix seconds (timestamp_header).
	// Defaults to none.
	TimestampHeader string
	// SignedPayload is the template of the signed bytes, with {body}, {timestamp} and
	// {id} (signed_payload). Defaults to "{timestamp}.{body}" with a TimestampHeader,
	// "{body}" without.
	SignedPayload string
	// IDHeader carries the event's id (id_header). Defaults to none: the id is in
	// the body.
	IDHeader string
	// TypeHeader carries the event's type (type_header). Defaults to none: the type
	// is in the body.
	TypeHeader string
}

// HMAC returns a signer for scheme under secret, or an error if scheme has no header,
// or an unknown algorithm or encoding.
func HMAC(scheme HMACScheme, secret string) (EventSigner, error) {
	s := hmacSigner{scheme: scheme, secret: secret}
	if scheme.Header == "" {
		return nil, errors.New("hmac: no signature header")
	}
	switch scheme.Algorithm {
	case "", "sha256":
		s.newHash = sha256.New
	case "sha512":
		s.newHash = sha512.New
	default:
		return nil, fmt.Errorf("hmac: algorithm %q is not sha256 or sha512", scheme.Algorithm)
	}
	switch scheme.Encoding {
	case "", "hex":
		s.encode = hex.EncodeToString
	case "base64":
		s.encode = base64.StdEncoding.EncodeToString
	default:
		return nil, fmt.Errorf("hmac: encoding %q is not hex or base64", scheme.Encoding)
	}
	if s.scheme.SignedPayload == "" {
		s.scheme.SignedPayload = "{body}"
		if scheme.TimestampHeader != "" {
			s.scheme.SignedPayload = "{timestamp}.{body}"
		}
	}
	if !strings.Contains(s.scheme.SignedPayload, "{body}") {
		return nil, fmt.Errorf("hmac: signed payload %q has no {body}", s.scheme.SignedPayload)
	}
	return s, nil
}

type hmacSigner struct {
	scheme  HMACScheme
	secret  string
	newHash func() hash.Hash
	encode  func([]byte) string
}

func (s hmacSigner) Sign(body []byte, at time.Time) (http.Header, error) {
	return signFromBody(s, "hmac", body, at, s.scheme.IDHeader, s.scheme.TypeHeader)
}

func (s hmacSigner) SignEvent(body []byte, at time.Time, id, typ string) (http.Header, error) {
	if err := needEvent("hmac", s.scheme.IDHeader, id, s.scheme.TypeHeader, typ); err != nil {
		return nil, err
	}
	ts := strconv.FormatInt(at.Unix(), 10)
	// A Replacer scans the template once, so a placeholder inside the body is not
	// replaced again.
	payload := strings.NewReplacer("{body}", string(body), "{timestamp}", ts, "{id}", id).Replace(s.scheme.SignedPayload)
	mac := hmac.New(s.newHash, []byte(s.secret))
	mac.Write([]byte(payload))

	h := http.Header{}
	h.Set(s.scheme.Header, s.scheme.Prefix+s.encode(mac.Sum(nil)))
	if s.scheme.TimestampHeader != "" {
		h.Set(s.scheme.TimestampHeader, ts)
	}
	if s.scheme.IDHeader != "" {
		h.Set(s.scheme.IDHeader, id)
	}
	if s.scheme.TypeHeader != "" {
		h.Set(s.scheme.TypeHeader, typ)
	}
	return h, nil
}
