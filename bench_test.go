package hookinbox_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/hookinbox/hookinbox"
)

// BenchmarkReceive measures Inbox.Receive (no HTTP, no signature) against the real
// database, from parallel goroutines: one transaction per event, the receipt inserted
// and the counting handler's row written. Compare with bench/receive_sync.pgbench,
// which sends the same SQL through pgbench: see docs/BENCHMARKS.md.
func BenchmarkReceive(b *testing.B) {
	for _, mode := range []string{epBilling, epAsync} {
		b.Run(mode, func(b *testing.B) {
			tb := setupBench(b)
			var n atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					id := fmt.Sprintf("evt_%d", n.Add(1))
					ev := hookinbox.Event{Endpoint: mode, ID: id, Type: "invoice.paid", Payload: benchPayload}
					if _, err := tb.inbox.Receive(tb.ctx, ev); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

var benchPayload = []byte(`{"id":"evt","type":"invoice.paid","data":{"object":{"id":"in_1","amount_paid":1000}}}`)
