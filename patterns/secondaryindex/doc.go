// Package secondaryindex is the design guide's secondary indexes: copies of
// an entity under other keys, so that a lookup or a sort order by another
// property is a point or range query instead of a table scan. It covers
// the intra-partition secondary index (guide pattern 1), the
// inter-partition secondary index (pattern 2), denormalized and partial
// copies (pattern 5, the index table article's fully, partially and not
// denormalized indexes) and compound keys (pattern 6).
//
// # Use
//
// A Store keeps entities of a type T (a struct with PartitionKey and RowKey
// fields) in rows of its own making: New takes the table as a
// [table.Table] of [table.Dynamic] and T as its type parameter,
// New[T](tbl, opts); nil opts is a Store of primaries only (Primary "id",
// no index). Writes take the value (Insert, Update) or its keys (Get,
// Modify, Delete): an entity's keys are T's, and its RowKey is its id.
// Reads return an [Entity], a [table.Entity] (the entity's keys, the
// primary's ETag, the value) that also says whether it came from a copy.
//
//	employees, err := secondaryindex.New(tbl, &secondaryindex.Options[Employee]{
//		Primary: "empid",
//		Indexes: []secondaryindex.Index[Employee]{
//			{Name: "email", Unique: true, On: []string{"Email"}},
//		},
//	})
//	_, err = employees.Insert(ctx, jo)
//	e, err := employees.Lookup(ctx, "Sales", "email", "jonesj@contoso.com", &secondaryindex.LookupOptions{Fetch: true})
//	e.Value.LastName = "Smith"
//	_, err = employees.Update(ctx, e.Value, e.ETag) // the primary's ETag (Get, or a lookup with Fetch)
//
// # Rows
//
// An index is over one or more properties of T (Index.On), and lookups
// take the value as T holds it: Lookup(ctx, pk, "email", "jo@contoso.com"),
// Find(ctx, pk, "grade", 7) for an int field, and for an index over
// several properties a []any with one value per property in order (Find
// and Range: the first few), Find(ctx, pk, "name", []any{"Jones"}). A value
// of another type is ErrInvalid naming the index and the type wanted, with
// nothing sent. Each value becomes a RowKey part that sorts as the values
// do (strings as they are, integers and times as fixed-width numbers), or
// what Index.Key computes from it (a normalized email, a blind value).
//
// Every row is self-describing, as in the guide's "empid_000223" and
// "email_jonesj@contoso.com". For an entity with PartitionKey pk and id
// (its RowKey field), Primary "empid" and an index "email" with value
// parts v...:
//
//	row                          PartitionKey         RowKey
//	primary                      pk                   keys.Join("empid", id)
//	SamePartition, unique        pk                   keys.Join("email", v...)
//	SamePartition, non-unique    pk                   keys.Join("email", v..., id)
//	OtherPartition, unique       Index.Partition(pk)  keys.Join("email", v...)
//	OtherPartition, non-unique   Index.Partition(pk)  keys.Join("email", v..., pk, id)
//
// A non-unique copy's RowKey ends with its primary's keys, so copies
// never share a row, also when one index partition holds the copies of
// several primary partitions (an organisation-wide index). Join escapes
// every part and keeps their order, so a range of values is a range of
// RowKeys. A copy holds the whole entity (Whole), chosen properties
// (Listed) or nothing but its primary (KeysOnly), and always TkRef,
// keys.Join(pk, id), which names its primary. The Store's queries select
// rows by these prefixes: other rows of the partition never decode into T.
//
// Read the Store's entities through the Store (Get, List, ListPage,
// lookups): its rows' RowKeys are its own ("empid!000500"), and a table
// of T over the same table would return those, not T's keys.
//
// These prefixes are the guide's own way of telling entity types apart, so
// to table.Types a Store's rows are just other types: register T (or a
// struct of the stored properties) with RegisterOptions.Prefix
// keys.Join(Primary, ""), and each index's copies with keys.Join(name, ""),
// and one query of a partition reads the primaries, the copies and any
// other registered entities kept beside them (a department), each into its
// Go type. The Store itself writes no type property: the prefix is its
// discriminator.
//
// # Large values
//
// With Options.Large (a patterns/largeentity Store of T over the same
// table) T's large values, an employee's photo, live in blobs: a write
// uploads them first, each under a write-unique name, and its transaction
// writes the primary pointing at them, so a primary never points at a
// missing blob, and a write that does not apply leaves only orphans,
// which the Large Store's Sweep deletes (Insert deletes them at once when
// the write certainly failed). Get and List read the blobs back (in
// parallel, each checked against its pointer's size and SHA-256, with
// largeentity's reread: a blob gone because the entity changed meanwhile
// makes the read read the entity again, a blob missing under an unchanged
// ETag is largeentity.ErrCorrupt, never data); lookups
// from copies never do: no copy holds a large value (Whole indexes are
// refused with Large, and so are Listed fields it may offload). Update
// writes v's large values whole (an unchanged one keeps its blob); Modify
// does not read them (fn sees them empty and one left empty keeps its
// blob), so a rename costs what it costs without a photo.
//
// Large combines with a Sealer (patterns/encryption's Table): an employee
// with an encrypted SSN and a photo in a blob. The primary row is sealed
// as written, its pointers beside the sealed fields, and opened before
// its pointers are followed; a field may be sealed or offloaded, not both
// (its blob would hold it unsealed: New refuses it).
//
// # Composing with other patterns
//
// InsertOps, UpdateOps, ModifyOps and DeleteOps return a write as a
// [table.Change] instead of sending it: the primary's op, its
// SamePartition copies' ops, the intent of its OtherPartition indexes,
// the NotAfter of its uploaded large values. Joined with other patterns'
// changes in the same partition (a logtail entry recording the change, a
// row of another Store), [table.Apply] writes them all in one transaction
// (eventual's Queue.Apply when there is an intent): all or nothing ("Composing
// patterns" in package table). A unique value taken fails the transaction
// with ErrDuplicate, a missing copy of the version read with ErrDrift
// (Update, Modify and Delete skip such a copy; a composed write cannot).
// The Ops forms read once (UpdateOps, ModifyOps, DeleteOps) and condition
// the write on the ETag read: a write in between fails the transaction
// with [table.ErrPreconditionFailed]; make the change again.
//
// # When to use which
//
// SamePartition indexes (pattern 1) are strongly consistent: the primary
// and its copies are written in one entity group transaction. Use them
// when lookups are within a partition (employees of a department by
// email). Every write then touches 1 + (number of indexes) rows of one
// partition, against the service's target of 2,000 entities per second
// per partition, and the whole write must fit one transaction.
//
// OtherPartition indexes (pattern 2) keep copies in other partitions
// (keys.Join(name, pk) by default, "email!Sales"), or in one
// organisation-wide partition or another table, to spread load or to look
// up across partitions. Lookup, Find and Range take the primary's
// partition and return only its entities; on an organisation-wide index,
// pk "" returns the entities of every partition (a non-empty pk reads the
// other partitions' copies of the range too, and skips them). They are
// kept by intents of patterns/eventual: the primary write and its intent
// commit together, and a worker reconciles the copies from the primary.
// They are eventually consistent: a lookup may miss a new entity or find
// a stale copy until the worker has run; Verify checks a result against
// its primary.
//
// Do not index volatile values (each change rewrites copies),
// low-cardinality values (one gender has half the entities: a huge range
// of copies) or heavily skewed ones, unless lookups target the rare
// values (the index table article).
//
// # Consistency
//
// Insert, Update, Modify and Delete write the primary and its
// SamePartition copies in one transaction: all or nothing, and a unique
// index refuses a value another entity has (ErrDuplicate, nothing
// written). Update, Modify and Delete read the primary first, to learn the
// copies of the version stored, and write conditioned on the ETag read,
// so a concurrent writer is never overwritten: Update and Delete given an
// ETag fail with [table.ErrPreconditionFailed] when the entity has another
// (before writing, or when it changed between the read and the write);
// given azcore.ETagAny, and in Modify, a change in between sends them back
// to the read (Options.Retry). A lost response is settled by
// patterns/table's verification: never reported failed when it applied,
// never applied twice. An index copy found missing during an update
// (drift) is skipped and the write goes on; Check and Rebuild find and
// repair drift.
//
// The worker of OtherPartition indexes reads the primary, writes the
// copies it calls for, deletes the copies its earlier versions had (the
// intent carries them: no scan), and reads the primary again: when it
// changed meanwhile, it goes round again, so a copy written from a stale
// read never survives. Duplicate and reordered intents converge. A unique
// OtherPartition index cannot refuse a duplicate before the primary is
// written: the worker reports it (ErrDuplicate; the intent is retried and
// poisoned), and the copy stays with the entity that had it first: Check
// reports the other's copy as Missing, and Rebuild, which cannot give it
// the value, returns ErrDuplicate.
//
// # Trust
//
// Rows are written by other processes and, with a SAS scoped to a
// partition (table.SASURL), by other tenants, so a read checks each copy
// before it follows or returns it: its TkRef must name a primary
// with valid keys whose copies this index keeps in the copy's partition
// (the same partition for SamePartition, Index.Partition of the
// primary's for OtherPartition), and a non-unique copy's RowKey must end
// with that primary's keys. Any other copy is ErrCorrupt, never data:
// Lookup returns it, Find and Range end with it, Check reports the row as
// an orphan and Rebuild deletes it. A copy's Value holds only what its
// index copies (its keys; Listed: Fields; Whole: every property), never a
// property the Sealer seals; the worker deletes only copies an intent's
// primary could have had, and replaces a unique value's row only when it
// is that primary's or a row the index could not have written. A primary
// that cannot be decoded or opened (planted in plaintext beside sealed
// ones) is reported in Drift.Unreadable and skipped by Check and Rebuild,
// which repair the rest and never delete its copies.
//
// So a writer holding only partition Sales can forge Sales's own rows
// (its entities, and copies naming them, as it could write the entities
// anyway), and nothing else: no lookup in Sales returns another
// partition's entity or a field its index does not copy, and it cannot
// write the copies of an OtherPartition index, which live in other
// partitions (its entities reach them only as every entity's do, through
// the worker and Rebuild, which compute them from the primary and leave a
// unique value with the entity that holds its copy). Whoever can write an
// index partition shared by several primary partitions can forge lookups
// of all of them: give that partition (or Index.Table) only to the
// Store's writers and worker.
//
// Cursors (ListPage, RangePage) may reach end users. Plain (the default),
// a cursor is base64 of the service's continuation token, the keys of the
// next row its listing reads, not yet returned: for RangePage, a copy's
// RowKey, that is the index's name and an indexed value (an email),
// possibly of an entity deleted since whose stale copy is still there.
// Altered, a plain cursor resumes the same listing elsewhere (never
// outside its partition and range). With a CursorKey on the Store's
// table ([table.Options].CursorKey; Index.Table's copies are listed
// with it too) every cursor is sealed: it shows nothing, and any altered
// character, or a cursor of another listing, is ErrInvalid before the
// network. An error quotes at most a cursor's first 16 bytes.
//
// # Cost in round trips
//
//	Insert                1 (SamePartition only); 3 with OtherPartition
//	                      indexes (eventual's Queue.Apply: reserve,
//	                      transaction, release); +1 upload per large
//	                      value, in parallel
//	Update, Modify,       2 (primary read + transaction), +2 per conflict
//	  Delete              with azcore.ETagAny and in Modify; 4 with
//	                      OtherPartition indexes (read + Queue.Apply)
//	InsertOps             0 (+1 upload per large value, in parallel); the
//	                      change joins a transaction
//	UpdateOps, ModifyOps, 1 read (+1 upload per changed large value); the
//	  DeleteOps           change joins a transaction
//	Get                   1 (+1 read per large value, in parallel)
//	List, ListPage        1 per page of primaries (+1 read per large value
//	                      selected, in parallel)
//	Lookup (unique)       1, +1 to fetch the primary (KeysOnly, or Fetch)
//	Find, Range,          1 per page of copies (of every partition sharing
//	  RangePage           the index partition), + 1 per entity fetched
//	                      (in parallel, in index order); on Cosmos DB
//	                      Find and Range read the range's copies before
//	                      the first entity is returned
//	Verify                1
//	Check, Rebuild        1 per page of primaries and of each index's
//	                      copies (a scan when no partition is given), +
//	                      the fixes (one transaction per entity)
//	worker, per intent    2 reads of the primary, + 1 write per copy
//	                      (+1 read for a unique index), + 2 per stale copy
//
// Traced (patterns/table's Observability), a write is a span of the
// Store's (secondaryindex.Insert, ...); with OtherPartition indexes an
// eventual.Apply span below it holds the reserve, the transaction and
// the release, and the worker's eventual.Handle span (in the same trace
// when the write's is sampled) holds the copies' writes.
//
// # Cosmos DB
//
// Supported. Writes are the same on both services, under the limits of the
// table's [table.Profile] (Cosmos DB: transactions of 2 MB, RowKeys of 255
// bytes, so long index values fail there before the network). Its queries
// return rows in no key order, so Find and Range read the copies of their
// range whole and sort them before returning the first entity (an ordered
// [table.Table.FanOut] of one query): the same round trips, memory for the
// whole range instead of a page. Lookup is a point read. Check and Rebuild
// match primaries and copies by key, which needs no order; a unique value
// two entities have stays with the first of them by key on both services.
//
// # Crash points
//
// A write is one transaction (with OtherPartition indexes, one of
// eventual's Queue.Apply: its intent runs if and only if the transaction
// applied), so a process that stops at any point of Insert, Update, Modify
// or Delete leaves the primary and its SamePartition copies together:
//
//	stopped                          state
//	before or after the read         unchanged
//	after a large value's upload     unchanged; the blob an orphan (Sweep)
//	transaction sent, answer lost    primary and copies changed together, or
//	                                 not at all (ErrOutcomeUnknown only when
//	                                 patterns/table cannot settle it)
//
// The worker of OtherPartition indexes (its steps: read, put, delete,
// reread) may stop anywhere: the intent is delivered again and every step
// is idempotent, so the copies converge on the primary.
package secondaryindex
