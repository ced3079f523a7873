package provider

import (
	"fmt"
	"strings"
)

// secretBytes checks an endpoint's secrets for the named scheme and returns copies of
// them as HMAC keys. It refuses no secrets at all, and an empty, blank or
// whitespace-padded secret. Errors identify a secret by its position, never by its
// value.
//
// The result is a copy so that a caller mutating its slice cannot change a verifier
// that is already in use by other goroutines.
func secretBytes(scheme string, secrets []string) ([][]byte, error) {
	if len(secrets) == 0 {
		return nil, fmt.Errorf("provider: %s: no signing secrets configured", scheme)
	}
	keys := make([][]byte, len(secrets))
	for i, secret := range secrets {
		switch {
		case strings.TrimSpace(secret) == "":
			// An empty HMAC key is a key anyone can sign with.
			return nil, fmt.Errorf("provider: %s: secret %d is empty", scheme, i)
		case strings.TrimSpace(secret) != secret:
			// Usually a newline picked up from a file or environment variable. It
			// would be part of the HMAC key, so nothing would ever verify.
			return nil, fmt.Errorf("provider: %s: secret %d has leading or trailing whitespace", scheme, i)
		}
		keys[i] = []byte(secret)
	}
	return keys, nil
}
