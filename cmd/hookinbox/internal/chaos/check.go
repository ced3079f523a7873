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
	CheckRepublished = "outbox: published twice, or under a stale fencing token"
	CheckCutAcked    = "COMMIT answer cut, yet answered 2xx processed/accepted"
	CheckNoRetry     = "503 answers without Retry-After"
	CheckWrongState  = "wrong final state (billing tables, sink vs facts)"
	CheckUnprocessed = "left unprocessed (pending, not in review)"
	CheckReview      = "in review (max attempts used)"
	CheckOwnExits    = "server exits the harness did not cause"
	CheckLeaked      = "log lines with the signing secret or a payload"
	CheckHarness     = "kills or restarts of the harness that failed"
	CheckNoFault     = "fault kinds asked for that never happened"
)

// Checks lists the checks in order.
var Checks = []string{CheckUnacked, CheckRefused, CheckLost, CheckTwice, CheckForwarded, CheckRepublished,
	CheckCutAcked, CheckNoRetry, CheckWrongState, CheckUnprocessed, CheckReview, CheckOwnExits, CheckLeaked,
	CheckHarness, CheckNoFault}

// Doubled are the checks that count something done twice: what the broken variants
// of the fences must be caught by.
var Doubled = []string{CheckTwice, CheckForwarded, CheckRepublished}

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
	// SinkHighest is, per outbox id, the highest fencing token the sink saw.
	SinkHighest map[int64]int64
}

// CutFigures are what the COMMIT cuts of receiving transactions held and what the
// requests in flight at each cut, for an event of its transaction, were answered.
type CutFigures struct {
	Receipts                         int
	Answered5xx, NoAnswer, Answer2xx int
}

// Check compares the database, the sink's record and the senders' acknowledgements
// with the workload's facts. It reads the database once everything has settled.
func Check(ctx context.Context, pool *pgxpool.Pool, w *Workload, o *Observed) (Findings, error) {
	f := Findings{}
	for _, c := range Checks {
		f[c] = &Finding{}
	}
	for _, d := range o.Acks.Unacked {
		f.add(CheckUnacked, "%s copy %d on %s", d.Events[0].ID, d.Copy, d.Endpoint().Name)
	}
	for _, a := range o.Acks.Log {
		switch {
		case a.Class == "4xx":
			f.add(CheckRefused, "%s on %s: %d", a.Delivery.Events[0].ID, a.Delivery.Endpoint().Name, a.Status)
		case a.Status == 503 && !a.RetryAfter:
			f.add(CheckNoRetry, "%s on %s at %s", a.Delivery.Events[0].ID, a.Delivery.Endpoint().Name, a.End.Format("15:04:05.000"))
		}
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
	checkFencing(f, db, o.SinkHighest)
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

// checkFencing counts outbox messages published more than once, or by a claim that
// was not the message's last (a dispatcher whose lease ran out overwrote the result
// of the one that took over), or whose publishing token is lower than one the sink
// saw (delivered again after it was published). With the fence, the token that
// publishes a message is its last claim's, the highest any delivery of it carried.
func checkFencing(f Findings, db *dbState, sinkHighest map[int64]int64) {
	ids := make([]int64, 0, len(db.published))
	for id := range db.published {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		tokens := db.published[id]
		last := db.lastClaim[id]
		switch {
		case len(tokens) > 1:
			f.add(CheckRepublished, "outbox message %d published %d times (tokens %v)", id, len(tokens), tokens)
		case tokens[0] < last:
			f.add(CheckRepublished, "outbox message %d published under token %d, a later claim holds %d", id, tokens[0], last)
		case tokens[0] < sinkHighest[id]:
			f.add(CheckRepublished, "outbox message %d published under token %d, the sink saw %d", id, tokens[0], sinkHighest[id])
		}
	}
}

// CheckCuts finds the receipts each COMMIT cut of a receiving transaction committed
// (by the server process and the transaction's start, which faults.sql records with
// each receipt) and counts, as CheckCutAcked, every 2xx that said such an event was
// processed or accepted: its receipt was inserted once, by the transaction whose
// client never heard the commit, so no request can have been told so. A batch's
// answer counts when the request was in flight at the cut and some of its events
// were answered otherwise than duplicate. It returns what the cuts held and how the
// requests in flight at them were answered.
func CheckCuts(ctx context.Context, pool *pgxpool.Pool, f Findings, w *Workload, acks *Acks, cuts []Cut) (CutFigures, error) {
	var fig CutFigures
	events := map[receiptKey]*Event{}
	for _, ev := range w.Events {
		events[receiptKey{ev.Fact.Endpoint.Name, ev.ID}] = ev
	}
	attempts := map[*Event][]Attempt{}
	for _, a := range acks.Log {
		for _, ev := range a.Delivery.Events {
			attempts[ev] = append(attempts[ev], a)
		}
	}
	for _, c := range cuts {
		if !c.Receiving {
			continue
		}
		// The server's now() is in microseconds, and later than the proxy's record of
		// the first message: the floor of that keeps the transaction's own rows only.
		rows, err := pool.Query(ctx, `SELECT endpoint, event_id FROM chaos_received
		                               WHERE pid = $1 AND xact_start >= $2 AND xact_start <= $3`,
			c.PID, c.TxStart.Truncate(time.Microsecond), c.At)
		if err != nil {
			return fig, fmt.Errorf("error reading the receipts of a cut transaction: %w", err)
		}
		var keys []receiptKey
		for rows.Next() {
			var k receiptKey
			if err := rows.Scan(&k.endpoint, &k.eventID); err != nil {
				rows.Close()
				return fig, err
			}
			keys = append(keys, k)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fig, err
		}
		fig.Receipts += len(keys)
		inFlight := map[*Attempt]bool{}
		for _, k := range keys {
			ev := events[k]
			if ev == nil {
				continue
			}
			for n := range attempts[ev] {
				a := &attempts[ev][n]
				during := !a.Start.After(c.At) && !a.End.Before(c.At)
				if during && !inFlight[a] {
					inFlight[a] = true
					switch a.Class {
					case "5xx":
						fig.Answered5xx++
					case "error":
						fig.NoAnswer++
					case "2xx":
						fig.Answer2xx++
					}
				}
				if a.Class != "2xx" {
					continue
				}
				batch := len(a.Delivery.Events) > 1
				if (!batch && (a.Outcome == "processed" || a.Outcome == "accepted")) || (batch && during && a.Fresh > 0) {
					f.add(CheckCutAcked, "%s on %s: answered %s at %s, its receipt's COMMIT answer cut at %s on %s",
						k.eventID, k.endpoint, a.Outcome, a.End.Format("15:04:05.000"), c.At.Format("15:04:05.000"), c.Link)
				}
			}
		}
	}
	return fig, nil
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
	// published are the tokens each outbox message was published under (its
	// delivery rows without an error), lastClaim its final claim token.
	published map[int64][]int64
	lastClaim map[int64]int64
}

func readDatabase(ctx context.Context, pool *pgxpool.Pool) (*dbState, error) {
	s := &dbState{
		receipts: map[receiptKey]time.Time{}, processed: map[receiptKey]int{}, forwardRows: map[receiptKey]int{},
		applied: map[string]map[string]int{}, invoices: map[string]invoiceRow{}, ledger: map[string][]int64{},
		anomalies: map[string]int{}, notes: map[string]int{}, published: map[int64][]int64{}, lastClaim: map[int64]int64{},
	}
	type query struct {
		sql  string
		scan func(scan func(...any) error) error
	}
	queries := []query{
		{`SELECT endpoint, event_id, state, attempts, received_at FROM hookinbox_inbox`, func(scan func(...any) error) error {
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
		{`SELECT id, source_endpoint, source_event_id, coalesce(destination, ''), event_type, aggregate_id, state, attempts, coalesce(claim_token, 0) FROM hookinbox_outbox`, func(scan func(...any) error) error {
			var id, token int64
			var k receiptKey
			var dest, typ, agg, state string
			var attempts int
			if err := scan(&id, &k.endpoint, &k.eventID, &dest, &typ, &agg, &state, &attempts, &token); err != nil {
				return err
			}
			s.lastClaim[id] = token
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
		{`SELECT outbox_id, claim_token FROM hookinbox_delivery WHERE error IS NULL ORDER BY id`, func(scan func(...any) error) error {
			var id, token int64
			err := scan(&id, &token)
			s.published[id] = append(s.published[id], token)
			return err
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
