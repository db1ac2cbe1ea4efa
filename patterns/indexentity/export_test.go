package indexentity

import (
	"context"

	"github.com/tablekit/tablekit/patterns/table"
)

// SetHook installs a test hook called at every step boundary ("transaction"
// and "commit" before a write's transaction, "ensure" before each list a
// reconciling pass checks, "blob" before a blob write, "verify" before a
// pass's second read of the entity); an error it returns is a crash there.
func SetHook[T any](x *Index[T], h func(step string) error) { x.hook = h }

// Enqueue puts an intent for entity (pk, rk) naming values on the queue,
// as a duplicate or late delivery would.
func Enqueue[T any](ctx context.Context, x *Index[T], pk, rk string, values ...string) error {
	_, err := x.q.Enqueue(ctx, x.kind.New(change{pk, rk, values}))
	return err
}

// Fits reports whether value's index entity can hold ids (for the
// same-partition store, RowKeys in partition pk), without the network.
func Fits[T any](x *Index[T], pk, value string, ids []ID) bool {
	var s []string
	for _, id := range ids {
		s = append(s, x.idOf(id.PartitionKey, id.RowKey))
	}
	lpk, lrk, err := x.listKey(pk, value)
	if err != nil {
		return false
	}
	_, err = listProperties(x.ix.Profile(), lpk, lrk, sortedIDs(s), value)
	return err == nil
}

// SeedList writes value's list of ids (RowKeys in partition pk for the
// same-partition store, else keys of any partition) directly, unconditionally:
// for benchmarks and tests that need a long list without its writes.
func SeedList[T any](ctx context.Context, x *Index[T], pk, value string, ids []ID) error {
	var l list
	for _, id := range ids {
		l.ids = append(l.ids, x.idOf(id.PartitionKey, id.RowKey))
	}
	l.ids = sortedIDs(l.ids)
	if x.store == blobs {
		cur, err := x.readBlob(ctx, value)
		if err != nil {
			return err
		}
		l.found, l.etag = cur.found, cur.etag
		return x.writeBlob(ctx, value, l)
	}
	lpk, lrk, err := x.listKey(pk, value)
	if err != nil {
		return err
	}
	props, err := listProperties(x.ix.Profile(), lpk, lrk, l.ids, value)
	if err != nil {
		return err
	}
	_, err = x.ix.Upsert(ctx, table.Dynamic{PartitionKey: lpk, RowKey: lrk, Properties: props}, table.Replace)
	return err
}

// Reconcile runs the handler's pass for entity (pk, rk) naming values, as
// a delivery of its intent would.
func Reconcile[T any](ctx context.Context, x *Index[T], pk, rk string, values ...string) error {
	return x.reconcile(ctx, change{pk, rk, values})
}

// SetMaxBlobSize lowers the size of a list's blob x writes and reads
// (MaxBlobSize), so that tests can plant blobs larger than it.
func SetMaxBlobSize[T any](x *Index[T], n int) { x.maxBlob = n }

// Defaults, for tests.
var DefaultRetryForTest = defaultRetry
