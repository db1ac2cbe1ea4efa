package indexentity

import (
	"context"

	"github.com/tablekit/tablekit/patterns/table"
)

// SetHook installs a test hook called at every step boundary ("transaction"
// before a write's transaction); an error it returns is a crash there.
func SetHook[T any](x *Index[T], h func(step string) error) { x.hook = h }

// SeedList writes value's list of ids (RowKeys in partition pk) directly,
// unconditionally: for benchmarks and tests that need a long list without
// its writes.
func SeedList[T any](ctx context.Context, x *Index[T], pk, value string, ids []ID) error {
	var l list
	for _, id := range ids {
		l.ids = append(l.ids, id.RowKey)
	}
	l.ids = sortedIDs(l.ids)
	lpk, lrk, err := x.listKey(pk, value)
	if err != nil {
		return err
	}
	props, err := listProperties(lpk, lrk, l.ids, "value "+value)
	if err != nil {
		return err
	}
	_, err = x.ix.Upsert(ctx, table.Dynamic{PartitionKey: lpk, RowKey: lrk, Properties: props}, table.Replace)
	return err
}
