package driver

import (
	"regexp"
	"strings"
)

// maskedToken is a word that holds a digit: an id (evt_1Nx9, in_42, a UUID), a
// number, a duration, a SQLSTATE, a port.
var maskedToken = regexp.MustCompile(`[A-Za-z0-9_.:/-]*[0-9][A-Za-z0-9_.:/-]*`)

// quoted is a double- or single-quoted value, which names the row or input rather than
// the cause.
var quoted = regexp.MustCompile(`"[^"]*"|'[^']*'`)

// maxFingerprint bounds a fingerprint's length, so a group's key stays small.
const maxFingerprint = 200

// ErrorFingerprint returns msg with what differs between occurrences of one cause
// masked: quoted values become "…", words that hold a digit become #. Two receipts
// that failed for the same reason on different events share a fingerprint, which is
// what the console groups the receipts that need review by.
func ErrorFingerprint(msg string) string {
	fp := quoted.ReplaceAllString(msg, `"…"`)
	fp = maskedToken.ReplaceAllString(fp, "#")
	fp = strings.Join(strings.Fields(fp), " ")
	if len(fp) > maxFingerprint {
		fp = strings.ToValidUTF8(fp[:maxFingerprint], "")
	}
	return fp
}
