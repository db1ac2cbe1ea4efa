// Package reread is the path by which a pattern that keeps large values
// through a patterns/largeentity Store in rows of its own
// (patterns/secondaryindex's primaries, with Options.Large) reads such an
// entity with largeentity's own reread loop: a blob gone because the
// entity changed after it was read makes the loop read the entity again; a
// blob still missing under the same ETag is largeentity.ErrCorrupt; an
// entity that keeps changing ends the loop after a bound. There is one loop,
// in largeentity; this package only makes it callable by tablekit's own
// packages (being internal), without an export that only tablekit uses.
package reread

import "github.com/Azure/azure-sdk-for-go/sdk/azcore"

// Func reads an entity and its offloaded values, once, and returns the
// ETag of the version read with the read's error:
// largeentity.ErrChanged when a blob it pointed at is gone.
type Func func() (azcore.ETag, error)

// loop is largeentity's loop, set when package largeentity is initialised.
var loop func(op, pk, rk string, read Func) error

// Register is called once by package largeentity's init with its loop.
func Register(f func(op, pk, rk string, read Func) error) { loop = f }

// Large runs read in largeentity's reread loop, for the entity (pk, rk) and
// the operation op (named in the loop's errors), and returns the error of
// the last read: nil, a failure other than largeentity.ErrChanged, an error
// matching largeentity.ErrCorrupt when a blob is missing while the entity,
// read again unchanged, still points at it, or the last ErrChanged when the
// entity changed during each of the loop's reads.
func Large(op, pk, rk string, read Func) error { return loop(op, pk, rk, read) }
