package sign

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"time"
)

// Twilio returns a signer for Twilio's request signatures: X-Twilio-Signature, the
// base64 HMAC-SHA1 under authToken of the URL followed by the form parameters of
// the body, sorted by name, each name then value. publicURL is the webhook's URL as
// configured in Twilio ("" to sign the URL each request is sent to). The body is a
// form, as Twilio posts; Twilio signs no timestamp, so at is unused.
//
// For a JSON body Twilio signs the URL alone, with the body's SHA-256 in it: send it
// to TwilioJSONURL(url, body).
func Twilio(authToken, publicURL string) URLSigner { return twilioSigner{authToken, publicURL} }

// TwilioJSONURL returns u with the bodySHA256 query parameter that Twilio adds when
// it posts a JSON body.
func TwilioJSONURL(u string, body []byte) string {
	sum := sha256.Sum256(body)
	sep := "?"
	if parsed, err := url.Parse(u); err == nil && parsed.RawQuery != "" {
		sep = "&"
	}
	return u + sep + "bodySHA256=" + hex.EncodeToString(sum[:])
}

type twilioSigner struct{ token, publicURL string }

func (s twilioSigner) Sign(body []byte, at time.Time) (http.Header, error) {
	return s.SignURL("", body, at)
}

func (s twilioSigner) SignURL(target string, body []byte, _ time.Time) (http.Header, error) {
	signed, err := urlToSign("twilio", s.publicURL, target)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(signed)
	if err != nil {
		return nil, fmt.Errorf("twilio: the URL does not parse")
	}
	mac := hmac.New(sha1.New, []byte(s.token))
	mac.Write([]byte(signed))
	if !u.Query().Has("bodySHA256") {
		values, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, fmt.Errorf("twilio: the body is not a form (for JSON, send to TwilioJSONURL)")
		}
		names := make([]string, 0, len(values))
		for k := range values {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			for _, v := range values[k] {
				mac.Write([]byte(k + v))
			}
		}
	}
	h := http.Header{}
	h.Set("X-Twilio-Signature", base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	h.Set("Content-Type", "application/x-www-form-urlencoded")
	if u.Query().Has("bodySHA256") {
		h.Set("Content-Type", "application/json")
	}
	return h, nil
}
