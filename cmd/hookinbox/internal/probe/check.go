package probe

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// Checker is the oracle: the receiver's own record of what it applied.
type Checker interface {
	// Applied returns how many times the receiver applied each fact it knows, by
	// fact id. ids are the run's facts, for a check that takes them; rows about other
	// facts are ignored by the caller.
	Applied(ctx context.Context, ids []string) (map[string]int64, error)
}

// SQLCheck runs a query on the receiver's database that returns rows (fact_id text,
// applied integer). The query may take the run's fact ids as $1 (text[]), to read
// only those: WHERE invoice_id = ANY($1).
type SQLCheck struct {
	conn     *pgx.Conn
	query    string
	takesIDs bool
}

// textOIDs and intOIDs are the column types a check may return.
var (
	textOIDs = map[uint32]bool{pgtype.TextOID: true, pgtype.VarcharOID: true, pgtype.BPCharOID: true, pgtype.NameOID: true}
	intOIDs  = map[uint32]bool{pgtype.Int2OID: true, pgtype.Int4OID: true, pgtype.Int8OID: true, pgtype.NumericOID: true}
)

// NewSQLCheck connects to databaseURL and prepares query, refusing a query that
// does not parse or does not return (fact_id text, applied integer). Errors are
// *InputError.
func NewSQLCheck(ctx context.Context, databaseURL, query string) (*SQLCheck, error) {
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return nil, inputErrorf("--check-database-url: cannot connect: %v", err)
	}
	sd, err := conn.Prepare(ctx, "", query)
	if err != nil {
		conn.Close(ctx)
		return nil, inputErrorf("--check-sql fails: %v", pgError(err))
	}
	c := &SQLCheck{conn: conn, query: query}
	if err := c.validate(sd); err != nil {
		conn.Close(ctx)
		return nil, err
	}
	return c, nil
}

func (c *SQLCheck) validate(sd *pgconn.StatementDescription) error {
	names := make([]string, len(sd.Fields))
	for i, f := range sd.Fields {
		names[i] = f.Name
	}
	shape := "(" + strings.Join(names, ", ") + ")"
	if len(sd.Fields) != 2 || names[0] != "fact_id" || names[1] != "applied" {
		return inputErrorf("--check-sql returns %s; it must return two columns, fact_id (text) and applied (integer): name them with AS", shape)
	}
	if !textOIDs[sd.Fields[0].DataTypeOID] {
		return inputErrorf("--check-sql: fact_id is not text; cast it (fact_id::text)")
	}
	if !intOIDs[sd.Fields[1].DataTypeOID] {
		return inputErrorf("--check-sql: applied is not an integer; cast it (applied::int)")
	}
	switch {
	case len(sd.ParamOIDs) == 1 && (sd.ParamOIDs[0] == pgtype.TextArrayOID || sd.ParamOIDs[0] == pgtype.VarcharArrayOID):
		c.takesIDs = true
	case len(sd.ParamOIDs) > 0:
		return inputErrorf("--check-sql: its only parameter may be $1, the run's fact ids as text[] (e.g. WHERE invoice_id = ANY($1))")
	}
	return nil
}

// Applied runs the query.
func (c *SQLCheck) Applied(ctx context.Context, ids []string) (map[string]int64, error) {
	var args []any
	if c.takesIDs {
		args = append(args, ids)
	}
	rows, err := c.conn.Query(ctx, c.query, args...)
	if err != nil {
		return nil, inputErrorf("--check-sql fails: %v", pgError(err))
	}
	applied := map[string]int64{}
	var id string
	var n int64
	_, err = pgx.ForEachRow(rows, []any{&id, &n}, func() error {
		applied[id] += n
		return nil
	})
	if err != nil {
		return nil, inputErrorf("--check-sql fails: %v", pgError(err))
	}
	return applied, nil
}

// Close closes the connection.
func (c *SQLCheck) Close(ctx context.Context) { c.conn.Close(ctx) }

// pgError is err on one line.
func pgError(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }

// URLCheck reads the receiver's applied counts from a URL of its own: a GET answered
// 200 with a JSON array of {"fact_id": "...", "applied": N}.
type URLCheck struct {
	URL    string
	Client *http.Client
}

// Applied fetches and decodes the URL.
func (c *URLCheck) Applied(ctx context.Context, _ []string) (map[string]int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL, nil)
	if err != nil {
		return nil, inputErrorf("--check-url: %v", err)
	}
	resp, err := c.Client.Do(req)
	if err != nil {
		return nil, inputErrorf("--check-url: %s", transportError(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, inputErrorf("--check-url: error reading the answer: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, inputErrorf("--check-url answered %d, want 200 with a JSON array of {\"fact_id\", \"applied\"}", resp.StatusCode)
	}
	var rows []map[string]json.RawMessage
	if err := json.Unmarshal(body, &rows); err != nil {
		return nil, inputErrorf("--check-url did not answer a JSON array of {\"fact_id\", \"applied\"}: %v", err)
	}
	applied := map[string]int64{}
	for i, row := range rows {
		var id string
		var n int64
		if err := json.Unmarshal(row["fact_id"], &id); err != nil || id == "" {
			return nil, inputErrorf("--check-url: item %d has no fact_id string", i)
		}
		if err := json.Unmarshal(row["applied"], &n); err != nil {
			return nil, inputErrorf("--check-url: item %d (%s) has no integer applied", i, id)
		}
		applied[id] += n
	}
	return applied, nil
}

// InputError is a run refused or stopped for what it was given: a target it cannot
// reach, a secret the receiver refuses, a check that fails or returns other columns.
type InputError struct{ msg string }

func (e *InputError) Error() string { return e.msg }

func inputErrorf(format string, args ...any) error {
	return &InputError{fmt.Sprintf(format, args...)}
}
