package provider

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// maxTimestampLen bounds a timestamp header. The largest int64 has 19 digits; a longer
// value cannot be a Unix time we would accept, and is refused before any parsing.
const maxTimestampLen = 19

// toleranceOrDefault returns tolerance, or DefaultTolerance for zero. A negative
// tolerance is an error: the check can be widened but never disabled, because it is
// the only thing that stops a captured delivery from being replayed.
func toleranceOrDefault(scheme string, tolerance time.Duration) (time.Duration, error) {
	switch {
	case tolerance < 0:
		return 0, fmt.Errorf("provider: %s: tolerance %s is negative", scheme, tolerance)
	case tolerance == 0:
		return DefaultTolerance, nil
	}
	return tolerance, nil
}

// nowOrDefault returns now, or time.Now for nil.
func nowOrDefault(now func() time.Time) func() time.Time {
	if now == nil {
		return time.Now
	}
	return now
}

// parseTimestampHeader parses a timestamp header of the named scheme: Unix seconds as
// ASCII digits only, no sign, at most maxTimestampLen of them.
func parseTimestampHeader(scheme, name, value string) (time.Time, error) {
	if len(value) > maxTimestampLen {
		return time.Time{}, fmt.Errorf("%s: %s is %d bytes, longer than any Unix time: %w",
			scheme, name, len(value), ErrMalformedSignature)
	}
	ts, err := parseUnixDigits(value)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: %s is not a Unix timestamp: %w", scheme, name, ErrMalformedSignature)
	}
	return time.Unix(ts, 0).UTC(), nil
}

// signatureAndTimestamp reads the two headers of a scheme that sends its
// signature in one and its Unix timestamp in another: both must be present, once,
// and the timestamp must parse. It returns both as sent, and the signing time.
func signatureAndTimestamp(h http.Header, scheme, signatureHeader, timestampHeader string) (sig, ts string, signedAt time.Time, err error) {
	if sig, err = headerValue(h, scheme, signatureHeader, ErrMalformedSignature); err != nil {
		return "", "", time.Time{}, err
	}
	if ts, err = headerValue(h, scheme, timestampHeader, ErrMalformedSignature); err != nil {
		return "", "", time.Time{}, err
	}
	switch {
	case sig == "":
		return "", "", time.Time{}, fmt.Errorf("%s: no %s header: %w", scheme, signatureHeader, ErrMissingSignature)
	case ts == "":
		return "", "", time.Time{}, fmt.Errorf("%s: no %s header: %w", scheme, timestampHeader, ErrMissingSignature)
	}
	if signedAt, err = parseTimestampHeader(scheme, timestampHeader, ts); err != nil {
		return "", "", time.Time{}, err
	}
	return sig, ts, signedAt, nil
}

// checkSkew refuses a signing time further than tolerance from now, in either
// direction. Callers check it after the MAC, so that a tolerance error always means a
// genuine signature (a replay or a skewed clock), never a forgery.
func checkSkew(scheme string, now, signedAt time.Time, tolerance time.Duration) error {
	// Sub saturates instead of overflowing, and comparing against both bounds avoids
	// negating the minimum Duration.
	if skew := now.Sub(signedAt); skew > tolerance || skew < -tolerance {
		return fmt.Errorf("%s: timestamp %d is %s from now, tolerance %s: %w",
			scheme, signedAt.Unix(), skew, tolerance, ErrTimestampOutOfTolerance)
	}
	return nil
}

// parseUnixDigits parses a non-empty string of ASCII digits. Unlike strconv.ParseInt
// alone it refuses a sign, which no provider sends.
func parseUnixDigits(s string) (int64, error) {
	if s == "" {
		return 0, errors.New("empty")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, errors.New("not a digit")
		}
	}
	return strconv.ParseInt(s, 10, 64)
}
