package table

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"iter"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/reserved"
)

// MaxPageSize is the most entities the service returns in one page.
const MaxPageSize = 1000

// Query describes a query. A nil *Query reads the whole table.
type Query struct {
	// Filter selects entities. The zero Filter matches every entity (a
	// table scan: give at least a PartitionKey whenever you can).
	Filter Filter
	// Select lists the properties to transfer (server-side projection);
	// the keys, and the Timestamp and write history (TkWrites) when T
	// has a Meta field, are always added. Default (nil): the properties T
	// has fields for; every property when T has an extra field.
	// []string{"*"} transfers every property.
	Select []string
	// PageSize is the most entities per page ($top). Default (0): the
	// service's maximum, 1000.
	PageSize int
	// Limit is the most entities the query returns in all. Default (0): no
	// limit. The last page asks only for what is missing. On Table Storage
	// these are the first Limit entities in key order; on a service whose
	// results come in no key order (Profile.Sorted false: Cosmos DB) they
	// are any Limit of the matches (an ordered FanOut sorts first).
	Limit int
	// Cursor resumes a query where an earlier page ended (Page.Next). The
	// Filter and Select must be the same as the earlier query's, and a
	// table with a CursorKey takes only cursors sealed by a key of the
	// same secret for this table and query (checked: ErrInvalidFilter
	// otherwise). See Cursor for what a cursor shows.
	Cursor Cursor
	// IncludeReserved returns the rows whose RowKey starts with
	// "~tk~", which queries skip by default. It is for the
	// packages that keep such rows (and their operators' tools).
	IncludeReserved bool
}

// Cursor is an opaque, serializable position in a query's results: the
// service's continuation token, how many entities the query has returned
// so far (so that Limit holds across pages and processes), and a
// fingerprint of the query's Filter and Select. The empty Cursor is the
// start (as a query's position) or the end (as Page.Next). A Cursor is a
// string: store it anywhere and resume later, in another process.
// Resuming it with a different Filter or Select is an ErrInvalidFilter.
//
// What a cursor reveals: by default a cursor is plain, base64 of its
// parts, readable by whoever holds it. On Table Storage its continuation
// token is the PartitionKey and RowKey of the next entity the query reads
// (one not yet returned; the pattern packages' cursors hold such keys
// too, so a cursor of an index shows an indexed value, such as an email);
// on Cosmos DB it is the service's token. An altered plain cursor
// resumes the same query (its Filter and Select, which the cursor does
// not carry: it never widens the query) at another position, or with
// another count toward Limit. Before cursors reach end users (a web API's
// page tokens), seal them: with a CursorKey (Options.CursorKey) a cursor is
// encrypted, authenticated and bound to its table and query, and any
// altered character is ErrInvalidFilter, nothing sent. Either way an
// error quotes at most a cursor's first 16 bytes, and its length.
type Cursor string

const cursorVersion = "c2"

// position is a decoded Cursor.
type position struct {
	pk, rk   *string
	returned int
	fp       string // "" for a version 1 cursor, which had none
}

func (p position) cursor() Cursor {
	if (p.pk == nil || *p.pk == "") && (p.rk == nil || *p.rk == "") {
		return ""
	}
	enc := base64.RawURLEncoding.EncodeToString
	return Cursor(cursorVersion + "." + enc([]byte(deref(p.pk))) + "." + enc([]byte(deref(p.rk))) + "." + strconv.Itoa(p.returned) + "." + p.fp)
}

// position decodes a plain cursor; false when it is malformed. It builds
// no error text: callers that fail name the cursor bounded.
func (c Cursor) position() (position, bool) {
	var p position
	if c == "" {
		return p, true
	}
	parts := strings.SplitN(string(c), ".", 6) // bounded, whatever c holds
	switch {
	case len(parts) == 3 && parts[0] == "c1":
	case len(parts) == 5 && parts[0] == cursorVersion:
		n, err := strconv.Atoi(parts[3])
		if err != nil || n < 0 {
			return p, false
		}
		p.returned, p.fp = n, parts[4]
	default:
		return p, false
	}
	dec := base64.RawURLEncoding.DecodeString
	pk, err1 := dec(parts[1])
	rk, err2 := dec(parts[2])
	if err1 != nil || err2 != nil {
		return p, false
	}
	if len(pk) > 0 {
		p.pk = ptr(string(pk))
	}
	if len(rk) > 0 {
		p.rk = ptr(string(rk))
	}
	return p, true
}

// fingerprint identifies a query's Filter and Select for its cursors.
func fingerprint(filter, sel string) string {
	h := sha256.Sum256([]byte(filter + "\x00" + sel))
	return base64.RawURLEncoding.EncodeToString(h[:9])
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Page is one page of query results.
type Page[T any] struct {
	// Items are the page's entities, in the service's order: PartitionKey,
	// then RowKey on Table Storage, no defined order on Cosmos DB (see
	// Profile.Sorted). A page may be short, or empty, even when more
	// results follow.
	Items []T
	// Next is where the next page starts; empty when the query is done
	// (no more results, or Limit reached).
	Next Cursor
}

// entityOf is v in its envelope; k holds the stored keys and ETag.
func entityOf[T any](k [3]string, v T) Entity[T] {
	return Entity[T]{PartitionKey: k[0], RowKey: k[1], ETag: azcore.ETag(k[2]), Value: v}
}

// QueryPage fetches one page of results: one round trip. Continue with
// q.Cursor = page.Next until Next is empty. The service may return short or
// empty pages with a continuation (at partition boundaries, after 5 s of
// work); only an empty Next means the end. Limit counts across the pages of
// one query: the cursor carries the count.
func (t *Table[T]) QueryPage(ctx context.Context, q *Query) (Page[T], error) {
	if q == nil {
		q = &Query{}
	}
	p, _, err := t.fetch(ctx, q, q.Cursor, false)
	return p, err
}

// Pages returns the query's results page by page, one round trip per page,
// starting at q.Cursor. Each page's Next is the cursor to resume from after
// it. While the loop handles a page, the next one is fetched (at most one
// page ahead, so at most two pages are in memory); a loop that stops early
// cancels that fetch. An error ends the sequence.
func (t *Table[T]) Pages(ctx context.Context, q *Query) iter.Seq2[Page[T], error] {
	return func(yield func(Page[T], error) bool) {
		for p := range t.pagesAhead(ctx, q, false) {
			if !yield(Page[T]{Items: p.items, Next: p.next}, p.err) {
				return
			}
		}
	}
}

// pagesAhead yields q's pages (with their entities' keys when wantKeys),
// fetching one page ahead: while the loop consumes a page, the next is on
// its way. A loop that stops early cancels that fetch and waits for it, so
// no goroutine outlives the loop. An error is the last page.
func (t *Table[T]) pagesAhead(ctx context.Context, q *Query, wantKeys bool) iter.Seq[keyedPage[T]] {
	if q == nil {
		q = &Query{}
	}
	return func(yield func(keyedPage[T]) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		fetch := func(at Cursor) chan keyedPage[T] {
			ch := make(chan keyedPage[T], 1)
			go func() {
				p, ks, err := t.fetch(ctx, q, at, wantKeys)
				ch <- keyedPage[T]{items: p.Items, keys: ks, next: p.Next, err: err}
			}()
			return ch
		}
		next := fetch(q.Cursor)
		for next != nil {
			p := <-next
			next = nil
			if p.err == nil && p.next != "" {
				next = fetch(p.next)
			}
			if !yield(p) {
				if next != nil {
					cancel()
					<-next
				}
				return
			}
		}
	}
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

// maxQueryLength is the longest query string tablekit sends (filter,
// projection and continuation token, URL-encoded). The service's front ends
// and the emulator (whose HTTP server caps a request's head at 16 KiB) reset
// the connection of longer requests, which would otherwise be retried as
// transient failures; a filter this long is better split into several
// queries, or replaced by a key range.
const maxQueryLength = 8 << 10

// fetch gets the page that starts at at, and when wantKeys each entity's
// stored keys. When at says Limit has been reached it returns the empty
// last page without a round trip.
func (t *Table[T]) fetch(ctx context.Context, q *Query, at Cursor, wantKeys bool) (Page[T], [][3]string, error) {
	ctx, sp := t.span(ctx, opQuery, "")
	p, ks, err := t.fetchPage(ctx, q, at, wantKeys)
	sp.End(err)
	return p, ks, err
}

// fetchPage is fetch, untraced.
func (t *Table[T]) fetchPage(ctx context.Context, q *Query, at Cursor, wantKeys bool) (Page[T], [][3]string, error) {
	var p Page[T]
	opts, pos, err := t.listOptions(q, at)
	if err != nil {
		return p, nil, err
	}
	if q.Limit > 0 && pos.returned >= q.Limit {
		return p, nil, nil
	}
	var entities [][]byte
	var nextPK, nextRK *string
	if t.direct != nil {
		entities, nextPK, nextRK, err = t.direct.query(ctx, opts)
	} else {
		var resp aztables.ListEntitiesResponse
		resp, err = t.client.NewListEntitiesPager(opts).NextPage(ctx)
		entities, nextPK, nextRK = resp.Entities, resp.NextPartitionKey, resp.NextRowKey
	}
	if err != nil {
		e := newError("query", t.name, "", "", err)
		e.Filter = deref(opts.Filter)
		return p, nil, e
	}
	p.Items = make([]T, len(entities))
	var ks [][3]string
	if wantKeys {
		ks = make([][3]string, len(entities))
	}
	n := 0
	for _, raw := range entities {
		var k *[3]string
		if wantKeys {
			k = &ks[n]
		}
		_, err := t.decode(raw, &p.Items[n], "", k, !q.IncludeReserved)
		if err != nil {
			if _, other := err.(errOtherType); other || err == errReservedRow {
				continue
			}
			return Page[T]{}, nil, &Error{Op: "query", Table: t.name, Filter: q.Filter.String(), Err: fmt.Errorf("decoding %v: %w", t.typeName(), err)}
		}
		n++
	}
	p.Items = p.Items[:n]
	if wantKeys {
		ks = ks[:n]
	}
	next := position{pk: nextPK, rk: nextRK, returned: pos.returned + len(p.Items), fp: pos.fp}
	if q.Limit == 0 || next.returned < q.Limit {
		p.Next = t.cursorOf(next)
	}
	return p, ks, nil
}

// listOptions builds the request for the page at at, checking the cursor
// against the query and the request's length against maxQueryLength.
func (t *Table[T]) listOptions(q *Query, at Cursor) (*aztables.ListEntitiesOptions, position, error) {
	fail := func(err error) (*aztables.ListEntitiesOptions, position, error) {
		return nil, position{}, &Error{Op: "query", Table: t.name, Filter: q.Filter.String(), Err: err}
	}
	filter, err := t.filter(q.Filter)
	if err != nil {
		return fail(err)
	}
	if !t.profile.TimestampFilters && slices.Contains(q.Filter.properties(), "Timestamp") {
		return fail(t.profile.unsupported("a filter on Timestamp", "it matches no entity there (store a time property of your own and filter on it)"))
	}
	sel, err := t.projection(q.Select)
	if err != nil {
		return fail(err)
	}
	pos, err := t.positionOf(at, fingerprint(filter, sel))
	if err != nil {
		// Not the filter: the error stays short, whoever sent the cursor.
		return nil, position{}, &Error{Op: "query", Table: t.name, Err: err}
	}
	opts := &aztables.ListEntitiesOptions{NextPartitionKey: pos.pk, NextRowKey: pos.rk, Top: ptr(int32(pageSize(q, pos.returned))), Format: ptr(aztables.MetadataFormatMinimal)}
	v := url.Values{}
	if filter != "" {
		opts.Filter = &filter
		v.Set("$filter", filter)
	}
	if sel != "" {
		opts.Select = &sel
		v.Set("$select", sel)
	}
	v.Set("NextPartitionKey", deref(pos.pk))
	v.Set("NextRowKey", deref(pos.rk))
	if n := len(v.Encode()); n > maxQueryLength {
		return fail(fmt.Errorf("%w: the query string would be %d bytes URL-encoded, more than %d (maxQueryLength): split the filter or use a key range", ErrTooLarge, n, maxQueryLength))
	}
	return opts, pos, nil
}

// filter renders f with literals typed by T's fields (see Filter), and
// rejects properties T has no field for unless T has an extra map.
func (t *Table[T]) filter(f Filter) (string, error) {
	c := t.codec
	if t.typ != nil {
		f = And(f, t.typ.filter)
	}
	unknown := ""
	s, err := f.render(func(name string) (kind, bool) {
		switch name {
		case "PartitionKey", "RowKey", reserved.WriteProperty:
			return kString, true
		case "Timestamp":
			return kTime, true
		}
		if t.types != nil && name == t.types.prop {
			return kString, true
		}
		if c == nil {
			return t.types.kindOf(name)
		}
		if i, ok := c.byName[name]; ok {
			return c.fields[i].kind, true
		}
		if c.extra == nil && unknown == "" {
			unknown = name
		}
		return 0, false
	})
	if err == nil && unknown != "" {
		err = fmt.Errorf("%w: %v has no property %q (a typed query compares only T's properties; use Table[Dynamic] or an extra map for others)", ErrInvalidFilter, c.typ, unknown)
	}
	return s, err
}

// projection returns the $select value for sel ("" for every property):
// the default projection of T for nil, and for an explicit list the
// properties named plus the keys, Timestamp and write history T reads.
func (t *Table[T]) projection(sel []string) (string, error) {
	c := t.codec
	switch {
	case sel == nil && t.typ != nil:
		return t.typ.selects, nil
	case sel == nil && c != nil:
		return strings.Join(c.selects, ","), nil
	case sel == nil, len(sel) == 1 && sel[0] == "*", t.typ != nil && t.typ.extra == nil:
		return "", nil
	}
	out := make([]string, 0, len(sel)+4)
	for _, name := range sel {
		switch name {
		case "PartitionKey", "RowKey", "Timestamp", reserved.WriteProperty:
		default:
			if err := validPropertyName(name); err != nil {
				return "", fmt.Errorf("in Select: %w", err)
			}
			if c == nil || c.extra != nil {
				break
			}
			if _, ok := c.byName[name]; !ok {
				return "", fmt.Errorf("%w: in Select: %v has no property %q", ErrInvalidEntity, c.typ, name)
			}
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	implicit := mixedImplicit
	if c != nil {
		implicit = c.implicit
	}
	if t.types != nil {
		implicit = append(slices.Clip(implicit), t.types.prop)
	}
	if t.typ != nil {
		implicit = append(implicit, t.typ.extra...)
	}
	if c == nil {
		// Types' reads: what older versions of any type need.
		for _, et := range t.types.reg.Load().byName {
			if len(et.ups) > 0 && et.extra == nil {
				return "", nil
			}
			if len(et.ups) > 0 {
				implicit = append(implicit, et.extra...)
			}
		}
	}
	for _, name := range implicit {
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return strings.Join(out, ","), nil
}

// mixedImplicit is what every projection of Types' reads adds (besides the
// type property): what any registered type may read.
var mixedImplicit = []string{"PartitionKey", "RowKey", "Timestamp", reserved.WriteProperty}

// Query returns the query's results as a sequence, fetching pages as the
// loop consumes them, one page ahead (see Pages); earlier pages are not
// retained. An error ends the sequence with (zero T, err). Breaking out
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
		for p, err := range t.Pages(ctx, q) {
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

// QueryEntities is Query yielding each entity in its envelope, with the
// keys it is stored under and its ETag (the keys are always read; see
// Query.Select): for types whose keys are computed (WithKeys, NewWithKeys)
// rather than held in fields, and for updates conditioned on each ETag.
// One page ahead like Pages.
func (t *Table[T]) QueryEntities(ctx context.Context, q *Query) iter.Seq2[Entity[T], error] {
	return func(yield func(Entity[T], error) bool) {
		for p := range t.pagesAhead(ctx, q, true) {
			if p.err != nil {
				yield(Entity[T]{}, p.err)
				return
			}
			for i := range p.items {
				if !yield(entityOf(p.keys[i], p.items[i]), nil) {
					return
				}
			}
		}
	}
}
