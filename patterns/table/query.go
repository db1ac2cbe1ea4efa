package table

import (
	"context"
	"encoding/base64"
	"fmt"
	"iter"
	"reflect"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// MaxPageSize is the most entities the service returns in one page.
const MaxPageSize = 1000

// Query describes a query. A nil *Query reads the whole table.
type Query struct {
	// Filter selects entities. The zero Filter matches every entity (a
	// table scan: give at least a PartitionKey whenever you can).
	Filter Filter
	// Select lists the properties to transfer (server-side projection).
	// Default (nil): the properties T has fields for, plus the keys and
	// Timestamp T reads; every property when T has an extra field.
	// []string{"*"} transfers every property.
	Select []string
	// PageSize is the most entities per page ($top). Default (0): the
	// service's maximum, 1000.
	PageSize int
	// Limit is the most entities the query returns in all. Default (0): no
	// limit. The last page asks only for what is missing.
	Limit int
	// Cursor resumes a query where an earlier page ended (Page.Next). The
	// Filter and Select must be the same as the earlier query's.
	Cursor Cursor
}

// Cursor is an opaque, serializable position in a query's results: the
// service's continuation token. The empty Cursor is the start (as a
// query's position) or the end (as Page.Next). A Cursor is a plain string:
// store it anywhere and resume later, in another process.
type Cursor string

const cursorVersion = "c1"

func newCursor(pk, rk *string) Cursor {
	if (pk == nil || *pk == "") && (rk == nil || *rk == "") {
		return ""
	}
	enc := base64.RawURLEncoding.EncodeToString
	return Cursor(cursorVersion + "." + enc([]byte(deref(pk))) + "." + enc([]byte(deref(rk))))
}

func (c Cursor) tokens() (pk, rk *string, err error) {
	if c == "" {
		return nil, nil, nil
	}
	parts := strings.Split(string(c), ".")
	if len(parts) != 3 || parts[0] != cursorVersion {
		return nil, nil, fmt.Errorf("table: malformed cursor %q", string(c))
	}
	dec := base64.RawURLEncoding.DecodeString
	p, err1 := dec(parts[1])
	r, err2 := dec(parts[2])
	if err1 != nil || err2 != nil {
		return nil, nil, fmt.Errorf("table: malformed cursor %q", string(c))
	}
	if len(p) > 0 {
		pk = ptr(string(p))
	}
	if len(r) > 0 {
		rk = ptr(string(r))
	}
	return pk, rk, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Page is one page of query results.
type Page[T any] struct {
	// Items are the page's entities, in PartitionKey, RowKey order. A page
	// may be short, or empty, even when more results follow.
	Items []T
	// Next is where the next page starts; empty when the query is done.
	Next Cursor
}

// QueryPage fetches one page of results: one round trip. Continue with
// q.Cursor = page.Next until Next is empty. The service may return short or
// empty pages with a continuation (at partition boundaries, after 5 s of
// work); only an empty Next means the end.
func (t *Table[T]) QueryPage(ctx context.Context, q *Query) (Page[T], error) {
	if q == nil {
		q = &Query{}
	}
	p, _, err := t.fetch(ctx, q, q.Cursor, pageSize(q, 0), false)
	return p, err
}

func pageSize(q *Query, returned int) int {
	n := q.PageSize
	if n <= 0 || n > MaxPageSize {
		n = MaxPageSize
	}
	if q.Limit > 0 {
		n = min(n, q.Limit-returned)
	}
	return n
}

// fetch gets one page starting at at, with at most top entities, and
// when wantKeys each entity's stored keys.
func (t *Table[T]) fetch(ctx context.Context, q *Query, at Cursor, top int, wantKeys bool) (Page[T], [][2]string, error) {
	var p Page[T]
	opts, err := t.listOptions(q, at, top)
	if err != nil {
		return p, nil, err
	}
	resp, err := t.client.NewListEntitiesPager(opts).NextPage(ctx)
	if err != nil {
		e := newError("query", t.name, "", "", err)
		e.Filter = q.Filter.String()
		return p, nil, e
	}
	p.Items = make([]T, len(resp.Entities))
	var ks [][2]string
	if wantKeys {
		ks = make([][2]string, len(resp.Entities))
	}
	for i, raw := range resp.Entities {
		var k *[2]string
		if wantKeys {
			k = &ks[i]
		}
		if err := t.codec.decode(raw, reflect.ValueOf(&p.Items[i]).Elem(), "", k); err != nil {
			return Page[T]{}, nil, &Error{Op: "query", Table: t.name, Filter: q.Filter.String(), Err: fmt.Errorf("decoding %v: %w", t.codec.typ, err)}
		}
	}
	p.Next = newCursor(resp.NextPartitionKey, resp.NextRowKey)
	return p, ks, nil
}

func (t *Table[T]) listOptions(q *Query, at Cursor, top int) (*aztables.ListEntitiesOptions, error) {
	if err := q.Filter.Err(); err != nil {
		return nil, &Error{Op: "query", Table: t.name, Err: err}
	}
	pk, rk, err := at.tokens()
	if err != nil {
		return nil, &Error{Op: "query", Table: t.name, Filter: q.Filter.String(), Err: err}
	}
	opts := &aztables.ListEntitiesOptions{NextPartitionKey: pk, NextRowKey: rk, Top: ptr(int32(top)), Format: ptr(aztables.MetadataFormatMinimal)}
	if f := q.Filter.String(); f != "" {
		opts.Filter = &f
	}
	sel := q.Select
	if sel == nil {
		sel = t.codec.selects
	}
	if len(sel) > 0 && !(len(sel) == 1 && sel[0] == "*") {
		opts.Select = ptr(strings.Join(sel, ","))
	}
	return opts, nil
}

// Query returns the query's results as a sequence, fetching pages lazily
// (one round trip per page) as the loop consumes them; earlier pages are
// not retained. An error ends the sequence with (zero T, err). Breaking out
// of the loop stops fetching.
//
//	for e, err := range employees.Query(ctx, &table.Query{Filter: table.PartitionKey("Sales")}) {
//		if err != nil { return err }
//		...
//	}
func (t *Table[T]) Query(ctx context.Context, q *Query) iter.Seq2[T, error] {
	if q == nil {
		q = &Query{}
	}
	return func(yield func(T, error) bool) {
		at, returned := q.Cursor, 0
		for {
			p, _, err := t.fetch(ctx, q, at, pageSize(q, returned), false)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for i := range p.Items {
				if !yield(p.Items[i], nil) {
					return
				}
			}
			returned += len(p.Items)
			if p.Next == "" || (q.Limit > 0 && returned >= q.Limit) {
				return
			}
			at = p.Next
		}
	}
}

// Collect gathers a sequence into a slice, stopping at the first error.
func Collect[T any](seq iter.Seq2[T, error]) ([]T, error) {
	var out []T
	for v, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, v)
	}
	return out, nil
}
