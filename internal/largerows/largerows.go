// Package largerows is the path by which a pattern that keeps large values
// through a patterns/largeentity Store in rows of its own making
// (patterns/secondaryindex's primaries, with its Options.Large) offloads,
// reads and rereads them: the rows are written by that pattern, in its own
// transactions and under its own keys, while the Store uploads, checks and
// sweeps their blobs. It is also the path by which patterns/transfer
// carries the blobs of a table's rows with the rows (Pointers): rows of
// any type, by a Store's Prefix alone. Package largeentity registers the implementation
// when it is initialised; being internal, this package is callable only
// by tablekit's own packages, so largeentity exports nothing that only
// tablekit uses. Such rows must be in the Store's table (its Sweep reads
// them there) and written only from Prepare's rows.
package largerows

import (
	"context"
	"errors"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/patterns/table"
)

// ErrChanged: a blob an entity pointed at when it was read is gone,
// because the entity changed since (a Delete or Sweep removes only blobs
// that no current version points at): read the entity again. Fetch
// returns it; Large's loop reads again on it.
var ErrChanged = errors.New("largeentity: a blob the entity pointed at is gone: the entity changed since it was read")

// Blobs are the blobs a row points at, as Store.Pointers found them: a
// value only the Store that returned it reads (nil: none).
type Blobs any

// Prepared is a value made ready by Store.Prepare for a write that
// another pattern sends.
type Prepared struct {
	// Row is the entity to write, whole (a replace or an insert): the
	// value's properties under the keys given, a pointer property in
	// place of each offloaded value.
	Row table.Dynamic
	// NotAfter is the latest time Row's write may be sent: half of the
	// Store's Grace after the uploads began, since Sweep may delete an
	// unreferenced blob older than Grace. Give it to the write's
	// table.Change.
	NotAfter time.Time
	// Uploaded are the blobs uploaded for Row, for Discard.
	Uploaded any
}

// Store is what a largeentity Store of T offers the pattern that keeps
// T's large values in its own rows. Implementations are safe for
// concurrent use.
type Store[T any] interface {
	// Client is the client of the Store's table: the other pattern's
	// rows must be in it.
	Client() *aztables.Client
	// Offloads reports whether the Store may offload property name (a
	// field it chooses): the other pattern must keep it out of every row
	// but the entity's own (no index copy holds it).
	Offloads(name string) bool
	// Without returns v with every field the Store may offload left
	// zero: the part of v that may be copied into other rows, and that
	// encodes as one entity whatever its large values' sizes.
	Without(v T) T
	// Pointers removes from row, read from the Store's table, the
	// pointer properties of the values T holds, and returns the blobs
	// they name, without reading them. A pointer the Store could not have
	// written for row's keys is an error (largeentity.ErrForeignBlob,
	// ErrCorrupt), as for Get.
	Pointers(row *table.Dynamic) (Blobs, error)
	// Fetch reads the values of blobs into v's fields, in parallel, each
	// checked against its pointer's size and SHA-256
	// (largeentity.ErrCorrupt otherwise). A blob gone because the entity
	// changed since it was read is ErrChanged.
	Fetch(ctx context.Context, v *T, blobs Blobs) error
	// Prepare readies v for a write of an entity with keys (pk, rk) in
	// the Store's table: it chooses the values to offload as Insert
	// does, uploads each to a new blob (created only if absent: 1 round
	// trip per value, in parallel), and returns the row to write,
	// pointing at them. current are the blobs of the stored version the
	// write is conditioned on: a value whose content is unchanged keeps
	// its blob, without an upload; with keepEmpty, so does each field v
	// leaves empty (a write whose value was read without its large
	// values). Send the write before Prepared.NotAfter; if it does not
	// apply, Discard the blobs (or leave them to Sweep).
	Prepare(ctx context.Context, v T, pk, rk string, current Blobs, keepEmpty bool) (Prepared, error)
	// Discard deletes the blobs p uploaded, for a write of p.Row that
	// certainly did not apply (best effort: Sweep deletes what it
	// leaves).
	Discard(ctx context.Context, p Prepared)
}

// ReadFunc reads an entity and its offloaded values, once, and returns the
// ETag of the version read with the read's error: ErrChanged when a blob
// it pointed at is gone.
type ReadFunc func() (azcore.ETag, error)

// Pointer is one offloaded value of a row: the blob its pointer property
// (reserved.BlobPointerPrefix + Property) names, as largeentity.Blob.
type Pointer struct {
	Property, Name string
	Size           int64
	SHA256         string // lower-case hex
}

// Codec reads and writes the pointer properties of rows of any type as a
// Store with a given Prefix does: what a copy of a table needs to carry
// its blobs (patterns/transfer). Implementations are safe for concurrent
// use.
type Codec interface {
	// Pointers returns the pointers of row, every property named
	// reserved.BlobPointerPrefix + P, each checked as a Store with prefix
	// reads it (its name in the directory of row's own keys and P, a size
	// of 1 to largeentity.MaxValueSize, a hex SHA-256), sorted by
	// property: the valid ones, and the error of the first that is not
	// (matching largeentity.ErrCorrupt, and ErrForeignBlob for a name
	// outside that directory).
	Pointers(prefix string, row *table.Dynamic) ([]Pointer, error)
	// Move returns p as a Store with prefix names the same value of
	// entity (pk, rk): the same write-unique id in its directory under
	// prefix; and the pointer property's name and value naming it.
	Move(prefix, pk, rk string, p Pointer) (moved Pointer, property, value string)
	// Metadata is the metadata a Store gives the blob of p, a value of
	// entity (pk, rk), for its Sweep.
	Metadata(pk, rk string, p Pointer) map[string]*string
}

// Set by package largeentity when it is initialised.
var (
	loop  func(op, pk, rk string, read ReadFunc) error
	of    func(store any) any
	codec Codec
)

// Register is called once by package largeentity's init with its reread
// loop, the function that gives a *largeentity.Store[T]'s Store[T], and
// its Codec.
func Register(reread func(op, pk, rk string, read ReadFunc) error, store func(any) any, c Codec) {
	loop, of, codec = reread, store, c
}

// Rows returns largeentity's Codec. The caller must import
// patterns/largeentity (which registers it).
func Rows() Codec { return codec }

// Of returns the Store[T] of store, a *largeentity.Store[T].
func Of[T any](store any) Store[T] { return of(store).(Store[T]) }

// Reread runs read in largeentity's reread loop, for the entity (pk, rk)
// and the operation op (named in the loop's errors), and returns the error
// of the last read: nil, a failure other than ErrChanged, an error
// matching largeentity.ErrCorrupt when a blob is missing while the entity,
// read again unchanged, still points at it, or the last ErrChanged when
// the entity changed during each of the loop's reads. There is one loop,
// in largeentity.
func Reread(op, pk, rk string, read ReadFunc) error { return loop(op, pk, rk, read) }
