package pgxdriver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hookinbox/hookinbox/driver"
)

// TranslateError wraps PostgreSQL errors with the driver package's sentinels.
func (d *Driver) TranslateError(err error) error { return translate(err) }

func translate(err error) error {
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "57014": // query_canceled: statement_timeout (or a cancel request)
			return fmt.Errorf("%w: %w", driver.ErrStatementTimeout, err)
		case pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03", // shutdown, cannot connect now
			pgErr.Code[:2] == "08", // connection exception
			pgErr.Code == "53300":  // too many connections
			return fmt.Errorf("%w: %w", driver.ErrUnavailable, err)
		case pgErr.Code == "22P02", pgErr.Code == "22P05", pgErr.Code == "22021": // bad JSON, \u0000, bad encoding
			return fmt.Errorf("%w: %w", driver.ErrInvalidInput, err)
		case pgErr.Code == "40001", pgErr.Code == "40P01": // serialization failure, deadlock
			return fmt.Errorf("%w: %w", driver.ErrConflict, err)
		}
		return err
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	if errors.As(err, &connectErr) || errors.As(err, &netErr) || pgconn.SafeToRetry(err) ||
		// A pooled connection the server dropped (restart, failover, network).
		errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("%w: %w", driver.ErrUnavailable, err)
		}
	}
	return err
}
