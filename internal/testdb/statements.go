package testdb

import (
	"context"
	"slices"
	"sync"

	"github.com/jackc/pgx/v5"
)

// Statements records the SQL that connections send, in order: set it as a
// pgx.ConnConfig's Tracer.
type Statements struct {
	mu  sync.Mutex
	sql []string
}

// TraceQueryStart records data.SQL.
func (s *Statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sql = append(s.sql, data.SQL)
	return ctx
}

// TraceQueryEnd does nothing.
func (s *Statements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// SQL returns the statements recorded so far.
func (s *Statements) SQL() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sql)
}
