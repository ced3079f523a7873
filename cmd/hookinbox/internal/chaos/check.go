package chaos

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// The checks, in the order they are printed. Every one must count 0.
const (
	CheckUnacked     = "not acknowledged (a copy never answered 2xx)"
	CheckRefused     = "valid events refused (4xx answers)"
	CheckLost        = "lost (2xx-acknowledged, no receipt or no effect)"
	CheckTwice       = "processed twice"
	CheckForwarded   = "forwarded twice under different idempotency keys"
	CheckWrongState  = "wrong final state (billing tables, sink vs facts)"
	CheckUnprocessed = "left unprocessed (pending, not in review)"
	CheckReview      = "in review (max attempts used)"
	CheckOwnExits    = "server exits the harness did not cause"
	CheckLeaked      = "log lines with the signing secret or a payload"
)

// Checks lists the checks in order.
var Checks = []string{CheckUnacked, CheckRefused, CheckLost, CheckTwice, CheckForwarded,
	CheckWrongState, CheckUnprocessed, CheckReview, CheckOwnExits, CheckLeaked}

// Finding is one check's count and a few examples of what it counted.
type Finding struct {
	Count    int
	Examples []string
}

// Findings are a run's checks by name.
type Findings map[string]*Finding

func (f Findings) add(check, format string, args ...any) {
	x := f[check]
	if x == nil {
		x = &Finding{}
		f[check] = x
	}
	x.Count++
	if len(x.Examples) < 5 {
		x.Examples = append(x.Examples, fmt.Sprintf(format, args...))
	}
}

// Count returns the check's count.
func (f Findings) Count(check string) int {
	if x := f[check]; x != nil {
		return x.Count
	}
	return 0
}

// Failed reports whether any check counted something.
func (f Findings) Failed() bool {
	for _, x := range f {
		if x.Count > 0 {
			return true
		}
	}
	return false
}

// Observed is everything a check compares with the facts, apart from the database.
type Observed struct {
	Acks *Acks
	Sink []SinkDelivery
	// BillingSink reports whether billing's notifications go to the sink (outbox.sink).
	BillingSink bool
	// OwnExits is the number of server exits the harness did not cause.
	OwnExits int
	// Logs are the servers' log files, and Canaries what none of their lines may hold:
	// the signing secret and the workload's payload marker.
	Logs     []string
	Canaries []string
}

// Check compares the database, the sink's record and the senders' acknowledgements
// with the workload's facts. It reads the database once everything has settled.
func Check(ctx context.Context, pool *pgxpool.Pool, w *Workload, o *Observed) (Findings, error) {
	f := Findings{}
	for _, c := range Checks {
		f[c] = &Finding{}
	}
	for _, d := range o.Acks.Unacked {
		f.add(CheckUnacked, "%s copy %d on %s", d.Event.ID, d.Copy, d.Event.Fact.Endpoint.Name)
	}
	for range o.Acks.Answers["4xx"] {
		f.add(CheckRefused, "a 4xx answer")
	}
	for range o.OwnExits {
		f.add(CheckOwnExits, "see the process logs")
	}
	if err := checkLogs(f, o.Logs, o.Canaries); err != nil {
		return nil, err
	}

	db, err := readDatabase(ctx, pool)
	if err != nil {
		return nil, err
	}
	sink := readSink(o.Sink)

	for _, fact := range w.Facts {
		ep := fact.Endpoint
		for _, ev := range fact.Events {
			key := receiptKey{ep.Name, ev.ID}
			received, ok := db.receipts[key]
			switch first, acked := o.Acks.FirstAck[ev]; {
			case acked && !ok:
				f.add(CheckLost, "%s on %s: acknowledged, no receipt", ev.ID, ep.Name)
			case acked && received.After(first.Add(clockMargin)):
				// The receipt was written before its first 2xx was sent, or it is not
				// the receipt that was acknowledged: that one was lost, and a later
				// copy was received anew.
				f.add(CheckLost, "%s on %s: acknowledged at %s, receipt from %s (lost, then received again)",
					ev.ID, ep.Name, first.Format("15:04:05.000"), received.Format("15:04:05.000"))
			}
			if n := db.processed[key]; n > 1 {
				f.add(CheckTwice, "%s on %s marked processed %d times", ev.ID, ep.Name, n)
			}
			if !ep.Forward() {
				continue
			}
			switch n := db.forwardRows[key]; {
			case n == 0 && ok:
				f.add(CheckLost, "%s on %s: received, never forwarded (no outbox row)", ev.ID, ep.Name)
			case n > 1:
				f.add(CheckTwice, "%s on %s: %d outbox rows", ev.ID, ep.Name, n)
			}
			switch keys := sink.forwardKeys[key]; {
			case len(keys) == 0:
				f.add(CheckWrongState, "%s on %s: not delivered to the sink", ev.ID, ep.Name)
			case len(keys) > 1:
				f.add(CheckForwarded, "%s on %s: %d keys", ev.ID, ep.Name, len(keys))
			}
		}
		if ep.Forward() {
			continue
		}
		applied := db.applied[fact.Invoice]
		for status, want := range fact.ExpectedApplies() {
			switch got := applied[status]; {
			case got > want:
				f.add(CheckTwice, "%s: %s applied %d times, %d events", fact.Invoice, status, got, want)
			case got < want:
				f.add(CheckLost, "%s: %s applied %d times, %d events", fact.Invoice, status, got, want)
			}
		}
		checkInvoice(f, fact, db, sink, o.BillingSink)
	}
	for _, r := range db.unprocessed {
		f.add(CheckUnprocessed, "%s", r)
	}
	for _, r := range db.review {
		f.add(CheckReview, "%s", r)
	}
	return f, nil
}

// checkInvoice compares one billing fact's invoice, ledger, anomalies and
// notification with what its script must leave.
func checkInvoice(f Findings, fact *Fact, db *dbState, sink *sinkState, billingSink bool) {
	inv, ok := db.invoices[fact.Invoice]
	want := fact.FinalStatus()
	switch {
	case !ok:
		f.add(CheckWrongState, "%s: no invoice, want %s", fact.Invoice, want)
		return
	case inv.status != want:
		f.add(CheckWrongState, "%s: %s, want %s", fact.Invoice, inv.status, want)
		return
	case fact.Paid() && inv.amountPaid != fact.Amount:
		f.add(CheckWrongState, "%s: amount paid %d, want %d", fact.Invoice, inv.amountPaid, fact.Amount)
		return
	}
	entries := db.ledger[fact.Invoice]
	wantEntries, wantNotes := 0, 0
	if fact.Paid() {
		wantEntries, wantNotes = 1, 1
	}
	switch {
	case len(entries) != wantEntries:
		f.add(CheckWrongState, "%s: %d ledger entries, want %d", fact.Invoice, len(entries), wantEntries)
	case wantEntries == 1 && entries[0] != fact.Amount:
		f.add(CheckWrongState, "%s: booked %d, want %d", fact.Invoice, entries[0], fact.Amount)
	case db.anomalies[fact.Invoice] > 0:
		f.add(CheckWrongState, "%s: %d billing anomalies, want none", fact.Invoice, db.anomalies[fact.Invoice])
	case db.notes[fact.Invoice] != wantNotes:
		f.add(CheckWrongState, "%s: %d InvoicePaymentBooked outbox rows, want %d", fact.Invoice, db.notes[fact.Invoice], wantNotes)
	case billingSink && wantNotes == 1 && len(sink.noteKeys[fact.Invoice]) == 0:
		f.add(CheckWrongState, "%s: InvoicePaymentBooked not delivered to the sink", fact.Invoice)
	}
	if keys := sink.noteKeys[fact.Invoice]; len(keys) > 1 {
		f.add(CheckForwarded, "%s: InvoicePaymentBooked under %d keys", fact.Invoice, len(keys))
	}
}

type receiptKey struct{ endpoint, eventID string }

// clockMargin allows for the clock being stepped during a run: a receipt's
// received_at (its transaction's start, on the database server) and the harness's
// acknowledgement time are read from the same machine's clock.
const clockMargin = 100 * time.Millisecond

type invoiceRow struct {
	status     string
	amountPaid int64
}

// dbState is what the checks read from the database.
type dbState struct {
	// receipts are the receipts' received_at.
	receipts    map[receiptKey]time.Time
	processed   map[receiptKey]int
	forwardRows map[receiptKey]int
	applied     map[string]map[string]int
	invoices    map[string]invoiceRow
	ledger      map[string][]int64
	anomalies   map[string]int
	notes       map[string]int
	unprocessed []string
	review      []string
}

func readDatabase(ctx context.Context, pool *pgxpool.Pool) (*dbState, error) {
	s := &dbState{
		receipts: map[receiptKey]time.Time{}, processed: map[receiptKey]int{}, forwardRows: map[receiptKey]int{},
		applied: map[string]map[string]int{}, invoices: map[string]invoiceRow{}, ledger: map[string][]int64{},
		anomalies: map[string]int{}, notes: map[string]int{},
	}
	type query struct {
		sql  string
		scan func(scan func(...any) error) error
	}
	queries := []query{
		{`SELECT endpoint, event_id, state, attempts, received_at FROM hookinbox_inbox WHERE provider = 'stripe'`, func(scan func(...any) error) error {
			var k receiptKey
			var state string
			var attempts int
			var received time.Time
			if err := scan(&k.endpoint, &k.eventID, &state, &attempts, &received); err != nil {
				return err
			}
			s.receipts[k] = received
			switch state {
			case "pending":
				s.unprocessed = append(s.unprocessed, fmt.Sprintf("receipt %s on %s (%d attempts)", k.eventID, k.endpoint, attempts))
			case "needs_review":
				s.review = append(s.review, fmt.Sprintf("receipt %s on %s (%d attempts)", k.eventID, k.endpoint, attempts))
			}
			return nil
		}},
		{`SELECT endpoint, event_id, count(*) FROM chaos_processed GROUP BY 1, 2`, func(scan func(...any) error) error {
			var k receiptKey
			var n int
			err := scan(&k.endpoint, &k.eventID, &n)
			s.processed[k] = n
			return err
		}},
		{`SELECT id, source_endpoint, source_event_id, coalesce(destination, ''), event_type, aggregate_id, state, attempts FROM hookinbox_outbox`, func(scan func(...any) error) error {
			var id int64
			var k receiptKey
			var dest, typ, agg, state string
			var attempts int
			if err := scan(&id, &k.endpoint, &k.eventID, &dest, &typ, &agg, &state, &attempts); err != nil {
				return err
			}
			if dest != "" {
				s.forwardRows[k]++
			} else if typ == "InvoicePaymentBooked" {
				s.notes[agg]++
			}
			switch state {
			case "pending":
				s.unprocessed = append(s.unprocessed, fmt.Sprintf("outbox message %d (%s of %s, %d attempts)", id, typ, k.eventID, attempts))
			case "needs_review":
				s.review = append(s.review, fmt.Sprintf("outbox message %d (%s of %s, %d attempts)", id, typ, k.eventID, attempts))
			}
			return nil
		}},
		{`SELECT invoice_id, status, count(*) FROM chaos_applied GROUP BY 1, 2`, func(scan func(...any) error) error {
			var inv, status string
			var n int
			if err := scan(&inv, &status, &n); err != nil {
				return err
			}
			if s.applied[inv] == nil {
				s.applied[inv] = map[string]int{}
			}
			s.applied[inv][status] = n
			return nil
		}},
		{`SELECT id, status, amount_paid FROM invoices`, func(scan func(...any) error) error {
			var id string
			var r invoiceRow
			err := scan(&id, &r.status, &r.amountPaid)
			s.invoices[id] = r
			return err
		}},
		{`SELECT invoice_id, amount FROM ledger_entries WHERE kind = 'payment'`, func(scan func(...any) error) error {
			var id string
			var amount int64
			err := scan(&id, &amount)
			s.ledger[id] = append(s.ledger[id], amount)
			return err
		}},
		{`SELECT invoice_id, count(*) FROM billing_anomalies GROUP BY 1`, func(scan func(...any) error) error {
			var id string
			var n int
			err := scan(&id, &n)
			s.anomalies[id] = n
			return err
		}},
	}
	for _, q := range queries {
		rows, err := pool.Query(ctx, q.sql)
		if err != nil {
			return nil, fmt.Errorf("error reading the final state (%s): %w", q.sql, err)
		}
		for rows.Next() {
			if err := q.scan(rows.Scan); err != nil {
				rows.Close()
				return nil, fmt.Errorf("error reading the final state (%s): %w", q.sql, err)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("error reading the final state (%s): %w", q.sql, err)
		}
	}
	sort.Strings(s.unprocessed)
	sort.Strings(s.review)
	return s, nil
}

// sinkState is the sink's record by source event (forwarded events) and by invoice
// (billing's notifications): the distinct idempotency keys each arrived under, and
// how many deliveries repeated a key.
type sinkState struct {
	forwardKeys map[receiptKey]map[string]bool
	noteKeys    map[string]map[string]bool
	sameKey     int
}

func readSink(deliveries []SinkDelivery) *sinkState {
	s := &sinkState{forwardKeys: map[receiptKey]map[string]bool{}, noteKeys: map[string]map[string]bool{}}
	seen := map[string]bool{}
	for _, d := range deliveries {
		if seen[d.IdempotencyKey] {
			s.sameKey++
		}
		seen[d.IdempotencyKey] = true
		var keys map[string]bool
		if d.EventType == "InvoicePaymentBooked" {
			if keys = s.noteKeys[d.Invoice]; keys == nil {
				keys = map[string]bool{}
				s.noteKeys[d.Invoice] = keys
			}
		} else {
			k := receiptKey{d.SourceEndpoint, d.SourceEventID}
			if keys = s.forwardKeys[k]; keys == nil {
				keys = map[string]bool{}
				s.forwardKeys[k] = keys
			}
		}
		keys[d.IdempotencyKey] = true
	}
	return s
}

// RedeliveredSameKey counts deliveries the sink had seen before under the same key:
// the outbox's at-least-once, which the key makes harmless.
func RedeliveredSameKey(deliveries []SinkDelivery) int { return readSink(deliveries).sameKey }

// checkLogs counts the log lines that hold a canary: a secret or a payload reached
// a log.
func checkLogs(f Findings, logs, canaries []string) error {
	for _, path := range logs {
		file, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("error reading a server's log: %w", err)
		}
		sc := bufio.NewScanner(file)
		sc.Buffer(make([]byte, 0, 64*1024), 4<<20)
		for n := 1; sc.Scan(); n++ {
			for _, c := range canaries {
				if c != "" && bytes.Contains(sc.Bytes(), []byte(c)) {
					f.add(CheckLeaked, "%s:%d holds %.8s…", filepath.Base(path), n, c)
				}
			}
		}
		err = sc.Err()
		file.Close()
		if err != nil {
			return fmt.Errorf("error reading %s: %w", path, err)
		}
	}
	return nil
}
