package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An address in use stops serve before the database is opened: nothing is created
// on disk for a server that cannot run, and the error names the address.
func TestServe_AddressInUseCreatesNothing(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	for name, extra := range map[string]string{
		"listen":         "listen: " + addr + "\n",
		"console.listen": "listen: 127.0.0.1:0\nconsole: {listen: '" + addr + "', tokens: [{name: alice, token_env: CONSOLE_TOKEN}]}\n",
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			config := writeConfig(t, dir, strings.Replace(sqliteConfig, "listen: 127.0.0.1:0\n", extra, 1)+"sqlite_path: hookinbox.db\n")
			r := runInProcess(t, map[string]string{"E2E_STRIPE_SECRET": e2eSecret, "CONSOLE_TOKEN": "a-console-token-of-16+"},
				"serve", "--config", config)
			if r.code != exitFailure || !strings.Contains(r.stderr, "error listening on") || !strings.Contains(r.stderr, addr) ||
				!strings.Contains(r.stderr, "address already in use") {
				t.Errorf("exit %d, stderr %q; want 1 and the address in use", r.code, r.stderr)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if e.Name() != filepath.Base(config) {
					t.Errorf("serve created %s before failing to listen", e.Name())
				}
			}
		})
	}
}
