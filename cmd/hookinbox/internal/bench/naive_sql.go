package bench

import (
	"fmt"
	"regexp"
	"strings"
)

// The naive receiver's SQL is the pgbench anchors' (pgbench_scripts.go), statement
// for statement, with the event's values bound as parameters where a script writes
// its per-transaction values. One source for both anchors: the naive receiver and
// pgbench run the same SQL, so naive/pgbench is what HTTP, the signature, JSON and a
// pool of one connection per sender cost a hand-written receiver, and
// hookinbox/naive what hookinbox's design gains over it.

// naiveValues are what the scripts write for an event's values, and the names the
// receiver binds them under. Each is replaced wherever it stands as a whole token.
var naiveValues = []struct{ script, name string }{
	{`'evt_pgb_' || :client_id || '_' || :seq`, "event_id"},
	{`'in_pgb_' || :client_id || '_' || :seq`, "invoice_id"},
	{`'invoice.paid'`, "event_type"},
	{`:payload`, "payload"},
	{`:message`, "message"},
	{`'` + eventCustomer + `'`, "customer"},
	{`1000`, "amount"},
	{`'` + eventCurrency + `'`, "currency"},
}

// naiveQuery is one statement of a script, with its values as parameters.
type naiveQuery struct {
	sql string
	// params name the value each parameter binds, $1 first.
	params []string
}

// args returns the values of q's parameters.
func (q naiveQuery) args(values map[string]any) []any {
	args := make([]any, len(q.params))
	for k, name := range q.params {
		args[k] = values[name]
	}
	return args
}

// naiveScript is a pgbench script as the naive receiver runs it.
type naiveScript struct {
	queries []naiveQuery
	// tx is true when the script is a transaction (BEGIN ... COMMIT); without, its
	// one statement commits on its own, as pgbench runs it.
	tx bool
}

// The naive receiver's scripts: the receipt alone (accept), and the receipt with the
// billing work (sync): receipt, invoice upsert, ledger entry, outbox message.
var (
	naiveAccept = mustNaiveScript(pgbenchAccept, 1)
	naiveSync   = mustNaiveScript(pgbenchSync, 4)
)

func mustNaiveScript(script string, statements int) naiveScript {
	s, err := parseNaiveScript(script)
	if err != nil {
		panic(err)
	}
	if len(s.queries) != statements {
		panic(fmt.Sprintf("bench: the naive receiver expects %d statements, the script has %d", statements, len(s.queries)))
	}
	return s
}

// parseNaiveScript splits a pgbench script into its statements (comments, \set
// lines, BEGIN and COMMIT left out) and binds naiveValues as parameters, numbered in
// naiveValues' order. What remains of pgbench's variables is an error.
func parseNaiveScript(script string) (naiveScript, error) {
	var body strings.Builder
	for line := range strings.Lines(script) {
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "--") || strings.HasPrefix(t, `\`) {
			continue
		}
		body.WriteString(line)
	}
	var s naiveScript
	for stmt := range strings.SplitSeq(body.String(), ";") {
		stmt = strings.TrimSpace(stmt)
		switch strings.ToUpper(stmt) {
		case "":
			continue
		case "BEGIN", "COMMIT":
			s.tx = true
			continue
		}
		var q naiveQuery
		for _, v := range naiveValues {
			re := regexp.MustCompile(`(^|[^\w:'])` + regexp.QuoteMeta(v.script) + `($|[^\w'])`)
			if !re.MatchString(stmt) {
				continue
			}
			q.params = append(q.params, v.name)
			param := fmt.Sprintf("${1}$$%d${2}", len(q.params))
			// Twice: a match consumes the character after it, which may start the next.
			stmt = re.ReplaceAllString(re.ReplaceAllString(stmt, param), param)
		}
		if strings.Contains(stmt, ":") && regexp.MustCompile(`(^|[^:]):[a-z_]`).MatchString(stmt) {
			return naiveScript{}, fmt.Errorf("bench: a pgbench variable is left in the naive receiver's statement:\n%s", stmt)
		}
		q.sql = stmt
		s.queries = append(s.queries, q)
	}
	return s, nil
}
