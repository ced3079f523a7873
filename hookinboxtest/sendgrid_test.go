package hookinboxtest_test

import (
	"crypto/x509"
	"encoding/base64"
	"testing"
	"time"

	"github.com/sendgrid/sendgrid-go/helpers/eventwebhook"

	"github.com/hookinbox/hookinbox/hookinboxtest"
)

func TestSendGrid_AcceptedBySendGridGo(t *testing.T) {
	t.Parallel()

	body := []byte(`[{"event":"delivered","sg_event_id":"e1"}]`)
	h, err := hookinboxtest.SendGrid(sendgridTestKey).Sign(body, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	public, err := hookinboxtest.SendGridPublicKey(sendgridTestKey)
	if err != nil {
		t.Fatal(err)
	}
	key, err := eventwebhook.ConvertPublicKeyBase64ToECDSA(public)
	if err != nil {
		t.Fatal(err)
	}
	ok, err := eventwebhook.VerifySignature(key, body, h.Get(eventwebhook.VerificationHTTPHeader), h.Get(eventwebhook.TimestampHTTPHeader))
	if !ok || err != nil {
		t.Errorf("sendgrid-go VerifySignature = %t, %v", ok, err)
	}
	if ok, _ := eventwebhook.VerifySignature(key, append(body, ' '), h.Get(eventwebhook.VerificationHTTPHeader), h.Get(eventwebhook.TimestampHTTPHeader)); ok {
		t.Error("sendgrid-go accepts another body")
	}
}

func TestParseSendGridKey(t *testing.T) {
	t.Parallel()

	pkcs8, _ := x509.MarshalPKCS8PrivateKey(sendgridTestKey)
	sec1, _ := x509.MarshalECPrivateKey(sendgridTestKey)
	for name, der := range map[string][]byte{"PKCS #8": pkcs8, "SEC 1": sec1} {
		k, err := hookinboxtest.ParseSendGridKey(base64.StdEncoding.EncodeToString(der))
		if err != nil || !k.Equal(sendgridTestKey) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
