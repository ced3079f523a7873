package sign

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// SendGrid returns a signer for SendGrid's signed Event Webhook:
// X-Twilio-Email-Event-Webhook-Timestamp, and X-Twilio-Email-Event-Webhook-Signature,
// the base64 ASN.1 DER ECDSA signature by key (P-256) of the SHA-256 of the
// timestamp followed by the body. The event's id and type are in the body (an array
// of one event: sg_event_id, event).
//
// SendGrid signs with its private key: in tests, generate a P-256 key and configure
// the endpoint with SendGridPublicKey(key).
func SendGrid(key *ecdsa.PrivateKey) Signer { return sendgridSigner{key} }

// SendGridPublicKey returns key's public key as SendGrid shows an Event Webhook's
// verification key: standard base64 of its DER SubjectPublicKeyInfo, what an
// endpoint's public_keys take.
func SendGridPublicKey(key *ecdsa.PrivateKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", fmt.Errorf("sendgrid: %w", err)
	}
	return base64.StdEncoding.EncodeToString(der), nil
}

// ParseSendGridKey reads a P-256 private key written as standard base64 of its DER
// encoding, PKCS #8 or SEC 1 (the body of an "EC PRIVATE KEY" PEM block). The error
// never quotes the key.
func ParseSendGridKey(s string) (*ecdsa.PrivateKey, error) {
	der, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("sendgrid: the private key is not standard base64")
	}
	if k, err := x509.ParseECPrivateKey(der); err == nil && k.Curve == elliptic.P256() {
		return k, nil
	}
	if k, err := x509.ParsePKCS8PrivateKey(der); err == nil {
		if ec, ok := k.(*ecdsa.PrivateKey); ok && ec.Curve == elliptic.P256() {
			return ec, nil
		}
	}
	return nil, fmt.Errorf("sendgrid: the private key is not a DER ECDSA P-256 key (PKCS #8 or SEC 1)")
}

type sendgridSigner struct{ key *ecdsa.PrivateKey }

func (s sendgridSigner) Sign(body []byte, at time.Time) (http.Header, error) {
	ts := strconv.FormatInt(at.Unix(), 10)
	sum := sha256.Sum256(append([]byte(ts), body...))
	sig, err := ecdsa.SignASN1(rand.Reader, s.key, sum[:])
	if err != nil {
		return nil, fmt.Errorf("sendgrid: %w", err)
	}
	h := http.Header{}
	h.Set("X-Twilio-Email-Event-Webhook-Timestamp", ts)
	h.Set("X-Twilio-Email-Event-Webhook-Signature", base64.StdEncoding.EncodeToString(sig))
	return h, nil
}
