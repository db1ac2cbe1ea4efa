// Package invalid is tablekit's one family of validation errors: the root
// sentinel (table.ErrInvalid), the sentinels that also match it (each
// pattern package's ErrInvalid, and the core's ErrInvalidEntity and its
// kin), and the marking by which a package passes the core's validation
// errors on under its own sentinel. Being internal, it is tablekit's own;
// users test errors with errors.Is against the exported sentinels.
package invalid

import "errors"

// Err is the root of every validation error (table.ErrInvalid).
var Err = errors.New("invalid")

// kind is a sentinel that is also Err.
type kind struct{ msg string }

func (e *kind) Error() string { return e.msg }

// Is makes every kind match Err.
func (e *kind) Is(target error) bool { return target == Err }

// New returns a sentinel error with the given text that also matches Err:
// each pattern package declares its ErrInvalid with it, so that
// errors.Is(err, table.ErrInvalid) holds for the validation errors of
// every package, and errors.Is(err, pkg.ErrInvalid) for the package's own.
func New(text string) error { return &kind{text} }

// Mark returns err marked with sentinel (a package's ErrInvalid, made by
// New) when err is a validation error (errors.Is(err, Err)): errors.Is then
// matches sentinel too, and everything err matched. Any other error, and
// nil, is returned as it is. Packages that pass the core's validation
// errors on use it, so that their callers can test for the package's
// sentinel alone.
func Mark(sentinel, err error) error {
	if err == nil || !errors.Is(err, Err) || errors.Is(err, sentinel) {
		return err
	}
	return Marked(sentinel, err)
}

// Marked returns err, unchanged in text and in what it unwraps to, that
// also satisfies errors.Is with sentinel (whether or not err is a
// validation error).
func Marked(sentinel, err error) error { return marked{sentinel, err} }

type marked struct{ sentinel, err error }

func (e marked) Error() string        { return e.err.Error() }
func (e marked) Unwrap() error        { return e.err }
func (e marked) Is(target error) bool { return errors.Is(e.sentinel, target) }
