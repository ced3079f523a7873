package sqlitedriver_test

import (
	"fmt"
	"testing"

	"github.com/hookinbox/hookinbox/driver"
	"github.com/hookinbox/hookinbox/hookinboxtype"
)

// The Executor's methods are exercised by driver/drivertest (TestDriver); these are
// what SQLite promises beyond the contract.

func key(id string) hookinboxtype.Key {
	return hookinboxtype.Key{Provider: "stripe", Endpoint: "async", EventID: id}
}

func payload(id string) []byte {
	return []byte(fmt.Sprintf(`{"id":%q,"type":"invoice.paid"}`, id))
}

// testMaxAttempts is the attempt limit the test inserts carry unless they say otherwise,
// as a receiver stores its own.
const testMaxAttempts = 10

// SQLite stores the verified body as received, byte for byte (PostgreSQL's jsonb
// normalises it).
func TestInboxInsert_PayloadKeptByteForByte(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := &driver.InboxInsertParams{Key: key("evt_1"), EventType: "invoice.paid", Payload: []byte(`{"id": "evt_1",  "spacing":"kept"}`), MaxAttempts: 5}
	if inserted, err := b.ex.InboxInsert(b.ctx, p); err != nil || !inserted {
		t.Fatal(inserted, err)
	}
	r, err := b.ex.InboxGet(b.ctx, key("evt_1"))
	if err != nil || r == nil || string(r.Payload) != string(p.Payload) {
		t.Fatalf("receipt %+v %v, want the payload as inserted", r, err)
	}
}

// SQLite counts each table's rows, where PostgreSQL estimates them.
func TestTableSizes_RowsCounted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i := range 5 {
		if _, err := b.ex.InboxInsert(b.ctx, &driver.InboxInsertParams{Key: key(fmt.Sprint("evt_", i)), EventType: "t", Payload: payload("x")}); err != nil {
			t.Fatal(err)
		}
	}
	sizes, err := b.ex.TableSizes(b.ctx)
	if err != nil || len(sizes) != 3 || sizes[0].Table != "hookinbox_inbox" || sizes[0].Rows != 5 || sizes[1].Rows != 0 || sizes[2].Rows != 0 {
		t.Fatalf("table sizes %+v, %v", sizes, err)
	}
}
