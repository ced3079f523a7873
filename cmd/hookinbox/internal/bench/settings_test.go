package bench

import (
	"context"
	"net/url"
	"testing"

	"github.com/hookinbox/hookinbox/internal/testdb"
)

// The settings say whether the connection is encrypted, as the URL's sslmode made
// it: off with sslmode=disable, on with sslmode=require (where the server offers TLS).
func TestSettings_TLSIsWhatTheConnectionUses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct{ sslmode, want string }{{"disable", "off"}, {"require", "on"}} {
		t.Run(c.sslmode, func(t *testing.T) {
			t.Parallel()
			u, err := url.Parse(testdb.DirectURL())
			if err != nil {
				t.Fatal(err)
			}
			q := u.Query()
			q.Set("sslmode", c.sslmode)
			u.RawQuery = q.Encode()
			admin, err := connectAdmin(ctx, u.String())
			if err != nil {
				if c.sslmode == "require" {
					t.Skipf("the test server offers no TLS: %v", err)
				}
				t.Fatal(err)
			}
			defer admin.Close()
			var s Settings
			s.readPostgres(ctx, admin, "")
			if s.SettingsError != "" || s.TLS != c.want {
				t.Errorf("sslmode=%s: tls %q (settings error %q), want %q", c.sslmode, s.TLS, s.SettingsError, c.want)
			}
		})
	}
}
