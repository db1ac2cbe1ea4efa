// Package buckets is the design guide's cure for the prepend/append
// anti-pattern (pattern 12): the entities of one hot logical partition are
// spread over N bucket partitions, so that N partition servers share the
// inserts, and read back as one sequence in RowKey order by a parallel
// range query per bucket and a k-way merge.
//
// # When to use it
//
// When one partition receives more inserts than one partition server
// takes: the guide's target is 2,000 entities per second per partition,
// and an append-only key space (the current hour as PartitionKey, ever
// increasing RowKeys) sends every insert to the same one. Measure first
// (examples/stress drives a partition against that target). Not when the
// partition is not hot: every read then costs N queries instead of one
// (BENCHMARKS.md). Not for point-read-heavy data keyed by something other
// than the RowKey (spread it with a compound PartitionKey instead, the
// guide's department + employee id). For the recent end of a log,
// patterns/logtail's Buckets option stores a log in the same bucket
// partitions with the same merge.
//
// # Keys
//
// New takes the [table.Table] of T whose rows the Spread stores: T's
// entities, one row each. An entity's keys (pk, rk) are its logical keys,
// given by the table as for any write ([table.Table.Keys]: T's key fields,
// or the function of [table.Options] Keys); Insert, Upsert, Update and
// their ops take the value v and read them from it. Entity (pk, rk) is
// stored under PartitionKey [keys.Join](pk, b) with b in three digits
// ("hot!003"), and its own RowKey rk (Spread.Partitions lists a logical
// partition's). The bucket b is
// Options.Bucket(rk, N): by default [keys.Bucket](rk, N), a stable hash
// (FNV-1a and a finalizer) that spreads any RowKeys evenly and never
// changes between versions or processes. With N = 1 the partition is
// keys.Join(pk): pk itself when it needs no escaping, so a partition that
// was never spread can be read as the count 1 (see Changing N).
//
// Reads (Get, Range) return an [Entry]: the [table.Entity] with the
// logical keys (T's PartitionKey field, if any, is set to the logical
// PartitionKey too, so a value read is written again under the same
// keys), the ETag read, and Entry.Partition, the stored partition. Pass
// the ETag to Update or Delete, which find the entity where Get found it.
//
// # Consistency
//
// Each insert is one insert into one partition: atomic, and settled exactly
// when its response is lost (patterns/table's write outcomes). Range reads
// each bucket with the service's consistency per partition; the buckets are
// read concurrently, not as one snapshot, so an insert that lands while a
// Range runs may or may not be seen, whatever its RowKey. Entities of one
// logical partition are no longer in one partition, so they cannot share
// an entity group transaction (the ops of InsertOp, UpdateOp and
// DeleteOp go to [table.Table.Submit] one transaction per bucket). Update
// and Delete are conditional on the ETag read (or azcore.ETagAny), as the
// table package's are; Update replaces the entity whole in the bucket
// that holds it. Upsert replaces an entity whole in its bucket under N;
// it, UpdateOp and DeleteOp are refused while Options.Earlier lists other
// counts, since the entity may then be stored in another bucket, which
// they would not reach (Update and Delete look there).
//
// # Cost in round trips
//
//	Insert            1 (+1 read to settle a lost response)
//	Upsert            1
//	Update, Delete    1; +1 per earlier count that puts the RowKey
//	                  elsewhere, only while it is not found (+1 read to
//	                  settle a lost response, as the table's)
//	Submit of n       1 per bucket per 100 ops (InsertOp, UpdateOp,
//	                  DeleteOp)
//	Get               1; +1 per earlier count that puts the RowKey
//	                  elsewhere, only while it is not found
//	Range             1 per page per partition read, Concurrency at a
//	                  time, merged lazily: N queries where one partition
//	                  needs one
//	RangePage         1 per partition read (PageSize+1 entities each, up
//	                  to 1,000), resumable from its cursor in any process
//
// # Changing N
//
// The bucket of a RowKey depends on N, so changing N moves where new
// entities go, never where old ones are: nothing is rewritten and nothing
// is lost, provided readers still read the old buckets. List every count
// used before in Options.Earlier:
//
//   - Range reads bucket partitions 0 to max(N, Earlier...)-1 (bucket
//     numbers do not depend on N, so the partitions of a smaller count are
//     among a larger count's), plus the unbucketed partition when a count
//     is 1. Growing N from 8 to 16 therefore needs Earlier only for Get;
//     shrinking it from 16 to 8 needs Earlier: []int{16}, or buckets 8-15
//     are no longer read.
//   - Get tries the bucket under N, then under each earlier count that
//     puts the RowKey in another partition.
//   - Update and Delete look where Get looks, and change the entity in
//     the bucket that holds it (nothing moves).
//   - Insert checks only the bucket under N: an entity with the same keys
//     written under an earlier count is not detected, and both are then
//     stored (Range yields both). Appended entities with unique RowKeys
//     (ticks and a writer id, as logtail makes them) never meet this.
//
// A count can leave Earlier once nothing written under it is stored: after
// the retention period of the data (see patterns/rotation for deleting a
// whole period at once), or after copying its entities with Insert (a
// value read carries its logical keys) and deleting the originals (with
// the Entry's Partition, RowKey and ETag).
//
// # Trust
//
// Range and Get read only the bucket partitions of the logical partition
// asked for (keys.Join escapes it, so no other logical partition's buckets
// are among them) and yield what they hold as T, through the table
// package (rows under "~tk~" skipped). A writer with a SAS
// scoped to some bucket partitions can add, change or delete entities in
// those, which Range then yields; it cannot reach other partitions. Invalid
// keys, keys under "~tk~", and logical PartitionKeys whose
// bucket partitions would be too long, are ErrInvalid and
// [table.ErrInvalidKey], before the network. Every error found before the
// network matches ErrInvalid and [table.ErrInvalid].
//
// RangePage's cursors may reach end users. Plain (the default), a cursor
// is "k1.", a fingerprint of the range, and the base64 of the RowKey of
// the page's last entity. Altered, it resumes the same range elsewhere
// (within the range, else ErrInvalid). With a CursorKey on the Spread's
// table ([table.Options] CursorKey) a cursor is sealed: it shows
// nothing, and any altered character, or a cursor of another range or
// table, is ErrInvalid before the network. An error quotes at most a
// cursor's first 16 bytes.
//
// # Order
//
// Range yields RowKey order (keys.Compare: ordinal, by UTF-16 code units),
// then partition order for equal RowKeys, exactly as one partition would
// return the same entities: the merge equals sorting everything read
// (tested against a sorted reference with random data). It is lazy: each
// bucket's query fetches its next page only when the merge reaches it, so
// memory holds a page or two per bucket, not the result.
//
// # Cosmos DB
//
// Supported. The Cosmos DB Table API returns a query's entities in no key
// order, so under the table's Cosmos [table.Profile] Range reads each
// bucket's part of the range whole and sorts it before the merge
// ([table.FanOutOptions] ByRowKey): the same order and round trips, but
// memory and transfer O(range) before the first entity instead of a page
// per bucket. Writes and Get are point operations, the same on both.
package buckets
