package sign

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// StandardWebhooks returns a signer for the Standard Webhooks scheme: webhook-id,
// webhook-timestamp, and webhook-signature with one "v1,<base64>" per secret,
// space-separated, as a sender does while an old secret is still active. Each
// signature is the HMAC-SHA256 of "<id>.<timestamp>.<body>" under the key that the
// secret ("whsec_" and base64; the prefix may be left out) encodes. The type is in the
// body's "type", so SignEvent ignores typ.
func StandardWebhooks(secrets ...string) EventSigner {
	return standardWebhooksSigner{secrets: secrets, prefix: "webhook"}
}

// Svix returns a signer for the same scheme under Svix's header names: svix-id,
// svix-timestamp and svix-signature.
func Svix(secrets ...string) EventSigner {
	return standardWebhooksSigner{secrets: secrets, prefix: "svix"}
}

type standardWebhooksSigner struct {
	secrets []string
	prefix  string
}

func (s standardWebhooksSigner) Sign(body []byte, at time.Time) (http.Header, error) {
	return signFromBody(s, s.prefix, body, at, s.prefix+"-id", "")
}

func (s standardWebhooksSigner) SignEvent(body []byte, at time.Time, id, _ string) (http.Header, error) {
	if err := needEvent(s.prefix, s.prefix+"-id", id, "", ""); err != nil {
		return nil, err
	}
	ts := strconv.FormatInt(at.Unix(), 10)
	sigs := make([]string, len(s.secrets))
	for i, secret := range s.secrets {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
		if err != nil {
			// err is not wrapped: it quotes an offset into the secret.
			return nil, fmt.Errorf("%s: secret %d is not base64 after whsec_", s.prefix, i)
		}
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(id + "." + ts + "."))
		mac.Write(body)
		sigs[i] = "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	}
	h := http.Header{}
	h.Set(s.prefix+"-id", id)
	h.Set(s.prefix+"-timestamp", ts)
	h.Set(s.prefix+"-signature", strings.Join(sigs, " "))
	return h, nil
}
