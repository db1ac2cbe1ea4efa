package table

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/invalid"
	"github.com/tablekit/tablekit/internal/redact"
	"github.com/tablekit/tablekit/internal/retrycore"
	"github.com/tablekit/tablekit/keys"
)

// ErrInvalid is the root of tablekit's validation errors: input refused
// before anything is sent. ErrInvalidKey, ErrInvalidEntity, ErrInvalidBatch,
// ErrNoETag, ErrInvalidFilter, a
// limit (ErrTooLarge) this package finds before the network, and every
// pattern package's own ErrInvalid satisfy errors.Is(err, ErrInvalid); an
// answer of the service (a 400 or 413) does not, nor does a size found
// wrong in data read back from storage (ErrTooLarge beside a package's
// ErrCorrupt).
var ErrInvalid = invalid.Err

// Sentinel errors. Every error tablekit returns for these conditions
// satisfies errors.Is with the matching sentinel, whether it was detected
// before the network or reported by the service; service errors also still
// satisfy errors.As(err, **azcore.ResponseError).
var (
	// ErrNotFound: the entity does not exist (404 ResourceNotFound).
	ErrNotFound = errors.New("entity not found")
	// ErrTableNotFound: the table does not exist (404 TableNotFound).
	ErrTableNotFound = errors.New("table not found")
	// ErrAlreadyExists: an insert found an entity with the same keys, or a
	// table create found the table (409).
	ErrAlreadyExists = errors.New("already exists")
	// ErrPreconditionFailed: the ETag did not match; the entity changed
	// since it was read (412).
	ErrPreconditionFailed = errors.New("precondition failed: the entity changed since it was read")
	// ErrTooLarge: an entity, property value or batch exceeds a service
	// limit (1 MiB entity, 64 KiB value, 4 MiB or 100 operations per batch).
	ErrTooLarge = errors.New("too large")
	// ErrInvalidKey: a PartitionKey or RowKey the service would reject. It is
	// keys.ErrInvalidKey, so errors from package keys match it too; the
	// errors of this package and the pattern packages that wrap it also
	// match ErrInvalid (a bare error of package keys does not).
	ErrInvalidKey = keys.ErrInvalidKey
	// ErrInvalidEntity: an entity the service would reject for a reason other
	// than its size or keys: too many properties, a bad property name, a
	// value that cannot be represented.
	ErrInvalidEntity error = invalid.New("invalid entity")
	// ErrInvalidBatch: a batch the service would reject: several partitions
	// in one atomic group, the same entity twice in one transaction.
	ErrInvalidBatch error = invalid.New("invalid batch")
	// ErrNoETag: an update or delete was given no ETag. Pass the ETag read
	// with the entity, or azcore.ETagAny to write unconditionally.
	ErrNoETag error = invalid.New("no ETag: pass the entity's ETag, or azcore.ETagAny for an unconditional write")
	// ErrInvalidFilter: a filter that cannot be rendered (an unsupported
	// value type, an invalid property name).
	ErrInvalidFilter error = invalid.New("invalid filter")
	// ErrThrottled: the service asked the client to slow down (503
	// ServerBusy, 429) and the retry policy gave up.
	ErrThrottled = errors.New("throttled by the service")
	// ErrNotApplied: a batch operation was not applied because another
	// operation of its transaction failed, or its transaction was not sent.
	ErrNotApplied = errors.New("not applied")
)

// Error is a failed operation on one entity. It names the operation and the
// entity, satisfies errors.Is with the sentinel for its status and code, and
// unwraps to the underlying error (a *azcore.ResponseError for service
// errors).
type Error struct {
	Op           string // "insert", "get", "update", "delete", "upsert", "query", "batch"
	Table        string
	PartitionKey string
	RowKey       string
	Filter       string // the query's filter, for query errors
	StatusCode   int    // HTTP status; 0 when detected before the network
	Code         string // service error code, such as "EntityAlreadyExists"
	// Unknown reports that the write may or may not have been applied
	// (errors.Is(err, ErrOutcomeUnknown)): an attempt's response was lost
	// and reading the entity could not settle it. StatusCode and Code are
	// then the last attempt's answer, if it got one.
	Unknown bool
	Err     error
}

// Error names the operation, the entity and the failure in one line.
func (e *Error) Error() string {
	where := e.Op
	if e.Table != "" {
		where += " " + e.Table
	}
	if e.PartitionKey != "" || e.RowKey != "" {
		where += fmt.Sprintf(" (PartitionKey %q, RowKey %q)", e.PartitionKey, e.RowKey)
	}
	if e.Filter != "" {
		where += fmt.Sprintf(" (filter %q)", e.Filter)
	}
	if e.Unknown {
		where = "outcome unknown: " + where
	}
	if e.StatusCode == 0 {
		return fmt.Sprintf("table: %s: %v", where, e.Err)
	}
	// Not e.Err's text: azcore's messages are multi-line dumps of the
	// whole response. errors.As reaches it.
	code := e.Code
	if code == "" {
		code = http.StatusText(e.StatusCode)
	}
	msg := fmt.Sprintf("table: %s: %d %s", where, e.StatusCode, code)
	var re *azcore.ResponseError
	if !errors.As(e.Err, &re) {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Is matches the sentinel for the error's status and code, and
// ErrOutcomeUnknown when the outcome is unknown; an unknown outcome never
// matches ErrAlreadyExists or ErrPreconditionFailed (a loop that retries on
// those must not apply a write twice).
func (e *Error) Is(target error) bool {
	if target == ErrInvalid {
		// Found before the network; keys.ErrInvalidKey cannot match
		// ErrInvalid itself (package keys stands alone), and ErrTooLarge
		// does so only here: a size read back from storage is corruption,
		// not invalid input.
		return e.StatusCode == 0 && (errors.Is(e.Err, ErrInvalidKey) || errors.Is(e.Err, ErrTooLarge))
	}
	if e.Unknown {
		// The last answer may be the echo of this write's own earlier
		// attempt: never claim a conflict. "Gone" (404) stays true either way.
		if target == ErrOutcomeUnknown {
			return true
		}
		if target == ErrAlreadyExists || target == ErrPreconditionFailed {
			return false
		}
	}
	return e.StatusCode != 0 && sentinelFor(e.StatusCode, e.Code) == target
}

// sentinelFor maps a service status and error code to a sentinel.
func sentinelFor(status int, code string) error {
	switch {
	case code == "TableNotFound":
		return ErrTableNotFound
	case status == http.StatusNotFound:
		return ErrNotFound
	case status == http.StatusConflict && (code == "EntityAlreadyExists" || code == "TableAlreadyExists" || code == ""):
		return ErrAlreadyExists
	case status == http.StatusPreconditionFailed:
		return ErrPreconditionFailed
	case status == http.StatusRequestEntityTooLarge, code == "EntityTooLarge", code == "PropertyValueTooLarge", code == "RequestBodyTooLarge":
		return ErrTooLarge
	case status == http.StatusTooManyRequests, status == http.StatusServiceUnavailable && code == "ServerBusy":
		return ErrThrottled
	case code == "InvalidDuplicateRow", code == "CommandsInBatchActOnDifferentPartitions":
		return ErrInvalidBatch
	case code == "TooManyProperties", code == "PropertyNameInvalid", code == "PropertyNameTooLong":
		return ErrInvalidEntity
	}
	return nil
}

// wrap turns an SDK error into an *Error naming the operation and entity.
// Errors detected before the network (already *Error) pass through
// unchanged.
func wrap(op, table, pk, rk string, err error) error {
	if err == nil {
		return nil
	}
	var te *Error
	if errors.As(err, &te) {
		return err
	}
	return newError(op, table, pk, rk, err)
}

// newError is the one place where errors from the SDK and the network
// become *Error: the pipeline's ErrOutcomeUnknown verdict becomes the
// Unknown field (which settle may clear by reading), and shared access
// signatures are removed from transport errors.
func newError(op, table, pk, rk string, err error) *Error {
	e := &Error{Op: op, Table: table, PartitionKey: pk, RowKey: rk}
	var oe *retrycore.OutcomeError
	if errors.As(err, &oe) {
		err, e.Unknown = oe.Err, true
	}
	e.Err = redact.Error(err)
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		e.StatusCode, e.Code = re.StatusCode, re.ErrorCode
	}
	return e
}

// refused reports an error found before the network; it wraps sentinel.
func refused(op, pk, rk string, sentinel error, format string, args ...any) error {
	return &Error{Op: op, PartitionKey: pk, RowKey: rk, Err: fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)}
}
