package sqlitedriver_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/hookinbox/hookinbox"
)

// BenchmarkReceiveSQLite measures Inbox.Receive (no HTTP, no signature) on a SQLite
// file with Open's settings (WAL, synchronous=FULL: one fsync per commit), from
// parallel goroutines: one IMMEDIATE transaction per event, the receipt inserted and
// the counting handler's row written. The sub-benchmarks vary the pool size, which
// decided Open's MaxOpenConns, and the endpoint mode (sync: receipt and handler in one
// transaction; async: the receipt alone, one statement).
//
//	go test -run '^$' -bench ReceiveSQLite -cpu 1,4 -count 3 ./driver/sqlitedriver/
//
// On a disk, every commit waits for one fsync of the WAL (synchronous=FULL), which
// dominates. TMPDIR=/dev/shm puts the file on tmpfs, where the fsync costs nothing, to
// see the cost of the driver and of the writers' contention for the lock.
func BenchmarkReceiveSQLite(b *testing.B) {
	for _, mode := range []string{epBilling, epAsync} {
		for _, conns := range []int{1, 4, 16} {
			b.Run(fmt.Sprintf("%s/conns=%d", mode, conns), func(b *testing.B) {
				tb, inbox := setupInbox(b, inboxOpts{noBilling: true})
				tb.db.SetMaxOpenConns(conns)
				tb.db.SetMaxIdleConns(conns)
				inbox.Handle(mode, "invoice.paid", countingHandler)
				var n atomic.Int64
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						id := fmt.Sprintf("evt_%d", n.Add(1))
						ev := hookinbox.Event{Endpoint: mode, ID: id, Type: "invoice.paid", Payload: benchPayload}
						if _, err := inbox.Receive(tb.ctx, ev); err != nil {
							b.Fatal(err)
						}
					}
				})
			})
		}
	}
}

var benchPayload = []byte(`{"id":"evt","type":"invoice.paid","data":{"object":{"id":"in_1","amount_paid":1000}}}`)
