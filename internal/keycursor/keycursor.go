// Package keycursor encodes the cursors of the pattern packages' paged
// listings that merge several queries by key (logtail's buckets,
// buckets' partitions, rotation's periods): the keys of the last entity a
// page returned and a fingerprint of the listing, as a [table.Cursor],
// so a listing resumes after those keys in any process, and a cursor
// given to another listing is refused. With a [table.CursorKey] the
// cursor is sealed (internal/cursorseal) for the listing in its scope
// (the table or rotation it reads); without one it is plain:
// "k1.<fingerprint>.<base64url of each key>", which anyone holding it can
// read and alter.
//
// It also holds the one page loop of those listings (Merged.Page: the
// page size checked, the cursor parsed, the queries resumed after its
// keys and fanned out for one more entity than the page, the merge cut,
// the next cursor made), and PageSize, the rule every RangePage and Range
// applies to its options' PageSize.
package keycursor

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"iter"
	"strings"

	"github.com/tablekit/tablekit/internal/fanout"

	"github.com/tablekit/tablekit/internal/cursorseal"
	"github.com/tablekit/tablekit/patterns/table"
)

const version = "k1"

// Listing is the cursor codec of one listing. It is a value, safe for
// concurrent use.
type Listing struct {
	key     *cursorseal.Key // nil: plain cursors
	fp      string          // the fingerprint of the listing's parts
	sealFor string          // what a sealed cursor is bound to
}

// New returns the codec of the listing that parts define (each part of
// its definition: the package, its log or partition, its range), in scope
// (the name of the table, or the prefix of the tables, it reads), sealing
// its cursors with key when key is not nil.
// Source is one query over one table, for FanOut. A nil Query reads the
// whole table.
type Source[T any] struct {
	Table *table.Table[T]
	Query *table.Query
}

// FanOut is table.Table.FanOut over queries of one or several tables of
// the same type (a rotation's periods, the partitions of buckets and
// logtail), yielding each entity in its envelope (the keys it is stored
// under, its ETag). The tables may belong to different clients; costs,
// concurrency, order and errors are those of FanOut (ordered: Ordered or
// ByRowKey as opts says, else by PartitionKey then RowKey). A Source
// without a Table ends the sequence with table.ErrInvalidFilter before any
// request.
func FanOut[T any](ctx context.Context, srcs []Source[T], opts *table.FanOutOptions) iter.Seq2[table.Entity[T], error] {
	tables := make([]*table.Table[T], len(srcs))
	queries := make([]*table.Query, len(srcs))
	var first *table.Table[T]
	for i, s := range srcs {
		tables[i], queries[i] = s.Table, s.Query
		if s.Table != nil && first == nil {
			first = s.Table
		}
	}
	if first == nil {
		// No table to take the merge from: a table of none, which refuses
		// a source without a table as every merge does.
		first = &table.Table[T]{}
	}
	merge := fanout.Of(first).(func(context.Context, []*table.Table[T], []*table.Query, *table.FanOutOptions) iter.Seq2[table.Entity[T], error])
	return merge(ctx, tables, queries, opts)
}

// KeyOf returns the key that seals t's cursors (table.Options.CursorKey),
// nil when they are plain.
func KeyOf[T any](t *table.Table[T]) *table.CursorKey {
	k, _ := cursorseal.TableKey(t).(*table.CursorKey)
	return k
}

// Sealed returns a view of t whose cursors, and those of the patterns
// built over it, k seals (nil: plain), for pattern packages that list one
// table's rows under another's key, and for tests.
func Sealed[T any](t *table.Table[T], k *table.CursorKey) *table.Table[T] {
	return cursorseal.WithTableKey(t, k).(*table.Table[T])
}

func New(key *table.CursorKey, scope string, parts ...string) Listing {
	fp := fingerprint(parts...)
	return Listing{key: cursorseal.Of(key), fp: fp, sealFor: "keycursor\x00" + scope + "\x00" + fp}
}

// fingerprint identifies a listing by the parts that define it.
func fingerprint(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:9])
}

// Make is the cursor of the listing after the entity with keys last.
func (l Listing) Make(last ...string) table.Cursor {
	parts := []string{version, l.fp}
	for _, k := range last {
		parts = append(parts, base64.RawURLEncoding.EncodeToString([]byte(k)))
	}
	c := strings.Join(parts, ".")
	if l.key != nil {
		c = l.key.Seal(l.sealFor, c)
	}
	return table.Cursor(c)
}

// Parse returns the n keys of cursor c of the listing, and false when c is
// not one of the listing's cursors (malformed, of another listing, or,
// sealed, altered or sealed with another key). It builds no error text:
// a caller's names c with cursorseal.Quote.
func (l Listing) Parse(cursor table.Cursor, n int) ([]string, bool) {
	c := string(cursor)
	if l.key != nil {
		var ok bool
		if c, ok = l.key.Open(l.sealFor, c); !ok {
			return nil, false
		}
	}
	parts := strings.SplitN(c, ".", n+3) // bounded, whatever c holds
	if len(parts) != n+2 || parts[0] != version || parts[1] != l.fp {
		return nil, false
	}
	out := make([]string, n)
	for i, p := range parts[2:] {
		k, err := base64.RawURLEncoding.DecodeString(p)
		if err != nil {
			return nil, false
		}
		out[i] = string(k)
	}
	return out, true
}
