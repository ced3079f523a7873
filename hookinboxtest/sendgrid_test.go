package hookinboxtest_test

import (
	"crypto/x509"
	"encoding/base64"
	"testing"

	"github.com/hookinbox/hookinbox/hookinboxtest"
)

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
