package keycursor

import (
	"context"
	"fmt"

	"github.com/tablekit/tablekit/internal/cursorseal"
	"github.com/tablekit/tablekit/internal/invalid"
	"github.com/tablekit/tablekit/patterns/table"
)

// Merged is a paged listing that merges, by key, the queries of several
// partitions or tables: a bucketed log's buckets (patterns/logtail), a
// logical partition's buckets (patterns/buckets), a rotation's periods
// (patterns/rotation). Its Page is the one page loop of those listings:
// check the page size, parse the cursor, resume the queries after its
// keys, fan them out for n+1 entities each, cut the merge after n (never
// between entities of the same keys), and make the next page's cursor. A
// Merged is built per call; Page does not change it.
type Merged[T any] struct {
	// Listing is the cursor codec of the listing: its fingerprint covers
	// everything that defines the listing (range, partitions, filter).
	Listing Listing
	// ByRowKey merges by RowKey, then PartitionKey: one logical partition
	// spread over several partitions, whose cursor is the last RowKey.
	// Otherwise the merge is by PartitionKey, then RowKey (several tables
	// read as one), and the cursor holds both keys.
	ByRowKey bool
	// Concurrency is the most queries in flight (table.FanOutOptions).
	Concurrency int
	// In reports whether the keys of a cursor lie in the listing's range;
	// nil accepts any. A cursor whose keys are outside is refused.
	In func(keys []string) bool
	// Invalid is the package's ErrInvalid: a refused page size or cursor
	// matches it, as does a query the table package refuses.
	Invalid error
	// What names the listing in a refused cursor's error (bounded by the
	// caller: it may hold user input).
	What string
	// Sources returns the listing's queries over its whole range (nil
	// Query: every entity), called once the cursor is accepted (it may
	// read, as rotation lists its periods). Page adds the resume filter
	// and its limit to copies of the queries.
	Sources func(ctx context.Context) ([]Source[T], error)
}

// PageSize returns the page size that n asks for: 0 is the default,
// table.MaxPageSize; 1 to table.MaxPageSize are themselves; anything else
// is an error matching invalid (the package's ErrInvalid).
func PageSize(invalid error, n int) (int, error) {
	switch {
	case n == 0:
		return table.MaxPageSize, nil
	case n < 0 || n > table.MaxPageSize:
		return 0, fmt.Errorf("%w: PageSize %d, want 1..%d (0: %d)", invalid, n, table.MaxPageSize, table.MaxPageSize)
	}
	return n, nil
}

// Page returns the page of at most pageSize entities (see PageSize) after
// cursor ("" for the first page), merged in key order, and the cursor of
// the next page (empty when the listing is done). Entities of the same
// keys (RowKey alone with ByRowKey) are never split between pages, so a
// page may hold a few more. A cursor that is not the listing's, and a
// page size out of range, are refused before Sources is called.
//
// Each query asks for n+1 entities (n the page size): a page takes at
// most n of one query (its keys are unique within it, and a tie taken
// past n follows one of another query), so the (n+1)-th, when a query has
// one, shows that more follow, and the last page has no Next. At n =
// table.MaxPageSize, n+1 would cost a second round trip per query, so
// each asks for n: a full page then always has a Next, which may lead to
// an empty page. One round trip per query either way, on a service that
// returns full pages.
func (m *Merged[T]) Page(ctx context.Context, cursor table.Cursor, pageSize int) (table.Page[table.Entity[T]], error) {
	var page table.Page[table.Entity[T]]
	n, err := PageSize(m.Invalid, pageSize)
	if err != nil {
		return page, err
	}
	nkeys := 2
	if m.ByRowKey {
		nkeys = 1
	}
	var resume table.Filter
	if cursor != "" {
		k, ok := m.Listing.Parse(cursor, nkeys)
		if !ok || m.In != nil && !m.In(k) {
			return page, fmt.Errorf("%w: cursor %s is not one of this range's%s", m.Invalid, cursorseal.Quote(string(cursor)), m.What)
		}
		if m.ByRowKey {
			resume = table.Gt("RowKey", k[0])
		} else {
			resume = table.Or(table.Gt("PartitionKey", k[0]), table.And(table.PartitionKey(k[0]), table.Gt("RowKey", k[1])))
		}
	}
	srcs, err := m.Sources(ctx)
	if err != nil {
		return page, err
	}
	limit := min(n+1, table.MaxPageSize)
	for i, s := range srcs {
		q := table.Query{}
		if s.Query != nil {
			q = *s.Query
		}
		q.Filter, q.Limit, q.PageSize = table.And(q.Filter, resume), limit, 0
		srcs[i].Query = &q
	}
	same := func(a, b table.Entity[T]) bool {
		return a.RowKey == b.RowKey && (m.ByRowKey || a.PartitionKey == b.PartitionKey)
	}
	opts := &table.FanOutOptions{Ordered: true, ByRowKey: m.ByRowKey, Concurrency: m.Concurrency}
	next := func() table.Cursor {
		last := page.Items[len(page.Items)-1]
		if m.ByRowKey {
			return m.Listing.Make(last.RowKey)
		}
		return m.Listing.Make(last.PartitionKey, last.RowKey)
	}
	for e, err := range FanOut(ctx, srcs, opts) {
		if err != nil {
			return table.Page[table.Entity[T]]{}, invalid.Mark(m.Invalid, err)
		}
		if l := len(page.Items); l >= n && !same(e, page.Items[l-1]) {
			page.Next = next()
			return page, nil
		}
		page.Items = append(page.Items, e)
	}
	if limit == n && len(page.Items) >= n {
		page.Next = next() // a query may have had more than its n
	}
	return page, nil
}
