package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookinbox/hookinbox/hookinboxtest"
	"github.com/hookinbox/hookinbox/internal/testdb"
)

// The README's library section is this program: it is built with go build and run
// as a user would, against a schema of the test PostgreSQL, and sent what Stripe
// sends.
func TestLibraryExample_RecordsAPaymentOnceWithItsOutboxMessage(t *testing.T) {
	t.Parallel()
	const secret = "whsec_library_example"
	url, drop, err := testdb.NewSchemaURL()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop)

	bin := filepath.Join(t.TempDir(), "library")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+url, "STRIPE_WEBHOOK_SECRET="+secret, "LISTEN=127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Read only after exited is closed: then the program's log is complete.
	var (
		logs    strings.Builder
		waitErr error
	)
	exited := make(chan struct{})
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logs.WriteString(sc.Text() + "\n")
			var rec struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "listening" {
				listening <- rec.Addr
			}
		}
		waitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	var addr string
	select {
	case addr = <-listening:
	case <-exited:
		t.Fatalf("the program exited before listening (%v):\n%s", waitErr, logs.String())
	case <-time.After(time.Minute):
		t.Fatal("the program did not listen within a minute")
	}

	send := func(eventID string) string {
		t.Helper()
		body := `{"id":"` + eventID + `","object":"event","type":"invoice.paid",` +
			`"data":{"object":{"id":"in_1","object":"invoice","amount_paid":1200,"currency":"eur"}}}`
		req, err := hookinboxtest.NewRequest("http://"+addr+"/webhooks/stripe", hookinboxtest.Stripe(secret), []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		answer, _ := io.ReadAll(resp.Body)
		return resp.Status + " " + strings.TrimSpace(string(answer))
	}
	for _, step := range []struct{ eventID, want string }{
		{"evt_1", `200 OK {"outcome":"processed"}`},
		{"evt_1", `200 OK {"outcome":"duplicate"}`}, // Stripe's retry
		{"evt_2", `200 OK {"outcome":"processed"}`}, // a second Event object for the same payment
	} {
		if got := send(step.eventID); got != step.want {
			t.Fatalf("%s answered %s, want %s", step.eventID, got, step.want)
		}
	}

	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var payments, amount, messages int
	if err := pool.QueryRow(context.Background(), `SELECT count(*), coalesce(max(amount), 0) FROM payments WHERE invoice_id = 'in_1'`).Scan(&payments, &amount); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM hookinbox_outbox WHERE aggregate_id = 'in_1'`).Scan(&messages); err != nil {
		t.Fatal(err)
	}
	if payments != 1 || amount != 1200 || messages != 1 {
		t.Errorf("%d payment rows (amount %d) and %d outbox messages for in_1, want one of 1200 and one message", payments, amount, messages)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		if waitErr != nil {
			t.Errorf("the program exited with %v after SIGTERM, want 0:\n%s", waitErr, logs.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("the program did not exit within a minute of SIGTERM")
	}
}
