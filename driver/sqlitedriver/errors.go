package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/hookinbox/hookinbox/driver"
)

// TranslateError wraps SQLite errors with the driver package's sentinels:
//
//   - a statement ended by a context deadline (modernc.org/sqlite interrupts the
//     statement, or stops waiting for the write lock, and reports the context's
//     error): driver.ErrStatementTimeout, but only for a deadline, not a
//     cancellation;
//   - SQLITE_BUSY or SQLITE_LOCKED after the busy timeout, a file that cannot be
//     opened, read or written, a full disk, or a closed database:
//     driver.ErrUnavailable;
//   - a payload that is not JSON (the tables' *_payload_is_json checks), or a value
//     over SQLite's size limit: driver.ErrInvalidInput.
func (d *Driver) TranslateError(err error) error { return translate(err) }

func translate(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, driver.ErrStatementTimeout) || errors.Is(err, driver.ErrUnavailable) ||
		errors.Is(err, driver.ErrInvalidInput) {
		return err // translated already, e.g. a handler returning the core's error
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", driver.ErrStatementTimeout, err)
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	var sqErr *sqlite.Error
	if errors.As(err, &sqErr) {
		switch sqErr.Code() & 0xff { // the primary code of an extended one
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED,
			sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL, sqlite3.SQLITE_PROTOCOL:
			return fmt.Errorf("%w: %w", driver.ErrUnavailable, err)
		case sqlite3.SQLITE_TOOBIG:
			return fmt.Errorf("%w: %w", driver.ErrInvalidInput, err)
		case sqlite3.SQLITE_CONSTRAINT:
			if sqErr.Code() == sqlite3.SQLITE_CONSTRAINT_CHECK && strings.Contains(sqErr.Error(), "_payload_is_json") {
				return fmt.Errorf("%w: %w", driver.ErrInvalidInput, err)
			}
		}
		return err
	}
	if errors.Is(err, sql.ErrConnDone) || strings.Contains(err.Error(), "sql: database is closed") {
		return fmt.Errorf("%w: %w", driver.ErrUnavailable, err)
	}
	return err
}
