package provider

import (
	"encoding/base64"
	"fmt"
	"hash"
	"net/http"
	"strings"
	"time"
)

// HMAC verifies a configurable HMAC signature scheme. It is safe for concurrent use.
//
// The id and type, when they come from headers that SignedPayload does not include,
// are not signed: a captured delivery can then be replayed under a fresh id. Put {id}
// in SignedPayload when the sender signs it.
type HMAC struct {
	secrets         [][]byte
	header          string
	prefix          string
	newHash         func() hash.Hash
	size            int
	base64          bool
	timestampHeader string
	payload         []payloadPart
	idHeader        string
	signsID         bool
	idField         string
	typeHeader      string
	typeField       string
	tolerance       time.Duration
	retryWindow     time.Duration
	now             func() time.Time
}

var _ Verifier = (*HMAC)(nil)

// payloadPart is a piece of the signed payload: literal text, or one placeholder.
type payloadPart struct {
	literal     string
	placeholder string // "body", "timestamp" or "id"; "" for literal text
}

// Name returns "hmac".
func (*HMAC) Name() string { return "hmac" }

// RetryWindow returns the configured retry window, 72 hours by default.
func (v *HMAC) RetryWindow() time.Duration { return v.retryWindow }

// Verify accepts the delivery only if the signature header is the prefix followed by
// the encoded HMAC, under one of the configured secrets, of the signed payload built
// from body exactly as received, and, with a timestamp header, the timestamp is within
// the tolerance of now. Only then are the id and type read, from their headers or the
// JSON body.
//
// Errors wrap this package's sentinels and never contain a secret or the body.
func (v *HMAC) Verify(h http.Header, body []byte) (Verified, error) {
	value, err := headerValue(h, "hmac", v.header, ErrMalformedSignature)
	if err != nil {
		return Verified{}, err
	}
	if value == "" {
		return Verified{}, fmt.Errorf("hmac: no %s header: %w", v.header, ErrMissingSignature)
	}
	encoded, ok := strings.CutPrefix(value, v.prefix)
	if !ok {
		return Verified{}, fmt.Errorf("hmac: %s does not start with the configured prefix: %w", v.header, ErrMalformedSignature)
	}
	candidate, encode, err := v.decodeSignature(encoded)
	if err != nil {
		return Verified{}, err
	}

	var ts, id string
	var signedAt time.Time
	if v.timestampHeader != "" {
		if ts, err = headerValue(h, "hmac", v.timestampHeader, ErrMalformedSignature); err != nil {
			return Verified{}, err
		}
		if ts == "" {
			return Verified{}, fmt.Errorf("hmac: no %s header: %w", v.timestampHeader, ErrMissingSignature)
		}
		if signedAt, err = parseTimestampHeader("hmac", v.timestampHeader, ts); err != nil {
			return Verified{}, err
		}
	}
	if v.signsID {
		// Read before the MAC because it is signed; an id that is not signed is
		// read after the MAC, and its absence is an unusable event.
		if id, err = headerValue(h, "hmac", v.idHeader, ErrMalformedSignature); err != nil {
			return Verified{}, err
		}
	}

	message := make([][]byte, len(v.payload))
	for i, p := range v.payload {
		switch p.placeholder {
		case "body":
			message[i] = body
		case "timestamp":
			message[i] = []byte(ts)
		case "id":
			if id == "" {
				return Verified{}, fmt.Errorf("hmac: no %s header, which is signed: %w", v.idHeader, ErrMissingSignature)
			}
			message[i] = []byte(id)
		default:
			message[i] = []byte(p.literal)
		}
	}
	index := matchMAC(v.secrets, v.newHash, message, encode, [][]byte{candidate})
	if index < 0 {
		return Verified{}, fmt.Errorf("hmac: signature matches none of %d secrets: %w", len(v.secrets), ErrNoValidSignature)
	}
	if v.timestampHeader != "" {
		// After the MAC, so that a tolerance error always means a genuine signature.
		if err := checkSkew("hmac", v.now(), signedAt, v.tolerance); err != nil {
			return Verified{}, err
		}
	}

	id, typ, err := v.event(h, id, body)
	if err != nil {
		return Verified{}, err
	}
	return Verified{ID: id, Type: typ, Body: body, SecretIndex: index, Timestamp: signedAt,
		BodyIsJSON: v.idField != "" || v.typeField != ""}, nil
}

// decodeSignature returns what matchMAC compares: the digest for hex, the text for
// base64 (with base64Std to encode each HMAC). A value that cannot be the encoding of
// a digest of the configured algorithm is refused as no valid signature.
func (v *HMAC) decodeSignature(encoded string) (candidate []byte, encode func([]byte) []byte, err error) {
	if v.base64 {
		if want := base64.StdEncoding.EncodedLen(v.size); len(encoded) != want {
			return nil, nil, fmt.Errorf("hmac: %s signature is %d characters, want %d: %w",
				v.header, len(encoded), want, ErrNoValidSignature)
		}
		return []byte(encoded), base64Std, nil
	}
	digest, err := decodeHexDigest("hmac", v.header, encoded, v.size)
	if err != nil {
		return nil, nil, err
	}
	return digest, nil, nil
}

// event extracts the id and type of a verified delivery. id is the id header's value
// if it was signed, and so already read.
func (v *HMAC) event(h http.Header, id string, body []byte) (string, string, error) {
	var typ string
	var err error
	if v.idHeader != "" && !v.signsID {
		if id, err = headerValue(h, "hmac", v.idHeader, ErrUnparsableEvent); err != nil {
			return "", "", err
		}
	}
	if v.typeHeader != "" {
		if typ, err = headerValue(h, "hmac", v.typeHeader, ErrUnparsableEvent); err != nil {
			return "", "", err
		}
		if typ == "" {
			return "", "", fmt.Errorf("hmac: no %s header: %w", v.typeHeader, ErrUnparsableEvent)
		}
	}
	if v.idHeader != "" && id == "" {
		return "", "", fmt.Errorf("hmac: no %s header: %w", v.idHeader, ErrUnparsableEvent)
	}
	if v.idField == "" && v.typeField == "" {
		return id, typ, nil
	}

	object, err := eventObject("hmac", body)
	if err != nil {
		return "", "", err
	}
	if v.idField != "" {
		if id, err = eventString("hmac", object, v.idField, true); err != nil {
			return "", "", err
		}
	}
	if v.typeField != "" {
		if typ, err = eventString("hmac", object, v.typeField, false); err != nil {
			return "", "", err
		}
	}
	return id, typ, nil
}
