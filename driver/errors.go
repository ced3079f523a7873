package driver

import "errors"

// Errors that drivers translate their database's errors into (see
// Driver.TranslateError). The original error stays in the chain.
var (
	// ErrStatementTimeout means a statement was cancelled by the statement timeout.
	ErrStatementTimeout = errors.New("statement timeout")

	// ErrUnavailable means the database could not be reached or is shutting down.
	ErrUnavailable = errors.New("database unavailable")

	// ErrInvalidInput means the database refused a value, e.g. a JSON payload it cannot
	// store.
	ErrInvalidInput = errors.New("value refused by the database")

	// ErrSavepoint means a savepoint could not be taken: the transaction had already
	// failed, before the work the savepoint was to guard.
	ErrSavepoint = errors.New("savepoint not taken")

	// ErrConflict means the transaction lost a deadlock or a serialization conflict
	// with a concurrent one: the same work, alone in a new transaction, may succeed.
	ErrConflict = errors.New("transaction conflict")
)
