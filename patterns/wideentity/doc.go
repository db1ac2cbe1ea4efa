// Package wideentity is the design guide's wide entities pattern (pattern
// 10): a logical entity with more properties than one entity holds (252),
// or more bytes (1 MiB), such as the guide's 365 daily counts, stored as
// several rows of one partition that are written together in one entity
// group transaction and read together with one range query.
//
// # When to use it
//
// For an entity read and written as a whole that outgrows one row: a
// year of daily values, a wide feature vector, a struct of hundreds of
// fields. Not when the parts are read separately (store them as separate
// entities, perhaps with a compound key), not for values that grow without
// bound (the log tail, or blobs: the large entity pattern), and not beyond
// one transaction (see Limits).
//
// # API
//
// A [Store] of T writes to a *table.Table[table.Dynamic] (the table rule
// of tablekit: a pattern that stores rows of its own making from T, here
// a header and part rows, takes a Table[Dynamic] and T as New's type
// parameter); a nil *Options means defaults (8 parts):
//
//	counts, err := wideentity.New[table.Dynamic](tbl, nil)
//
// T is a struct (it may have more than 252 fields) or table.Dynamic for a
// property bag. A value's logical keys are those of T's key fields
// (Dynamic's PartitionKey and RowKey), or what Options.Keys computes:
// Insert and Update take the value; Get, Modify and Delete the keys.
// Update takes the core's table.Mode: table.Replace writes the whole
// entity, table.Fields(names...) and table.Merge merge properties into
// their part rows. Reads return an [Entity], the core's [table.Entity]
// (logical keys, the header's ETag, the value) with the number of part
// rows; writes return a [table.Result]. There is no Upsert: a write that
// does not know whether the entity exists cannot know its layout, whose
// rows a whole-entity write replaces in the same transaction.
//
// # Composing writes
//
// Every write is one transaction in the entity's partition, so it can be
// one part of a larger transaction (see "Composing patterns" in package
// table): InsertOps, UpdateOps, ModifyOps and DeleteOps return the write
// as a [table.Change] for a Table's Apply (or eventual's Queue.Apply),
// which sends it with the other changes of the partition all or none. The
// change holds Parts+1 operations (more for a replace that changes the
// layout), so the others must fit the rest of the transaction's 100 and
// its bytes; Join's error names each change's share. InsertOps,
// UpdateOps and DeleteOps send nothing: they are built for the Store's
// layout without a read, so an entity stored with another Parts fails the
// transaction with table.ErrNotFound, nothing applied (the change's error
// says so; Update and Delete, which read the header then, write it).
// ModifyOps reads the entity and conditions its replace on the header's
// ETag read: a write in between fails the transaction with
// table.ErrPreconditionFailed, and the caller makes the change again.
//
// # Rows
//
// Entity (pk, rk) is a header row and Options.Parts part rows in partition
// pk, under RowKeys that start with rk escaped (keys.Join):
//
//	keys.Join(rk, "h")                        the header: VersionProperty, PartsProperty
//	keys.Join(rk, "p", "NN", "00") ... "NN-1" part k of NN (keys.Pad, 2 digits)
//
// so "day!h", "day!p!02!00" and "day!p!02!01" for rk "day" and Parts 2.
// Get reads the range [keys.Join(rk, ""), keys.PrefixRange(rk)'s end):
// exactly the keys.Join(rk, ...) keys. Join escapes '!' inside rk, and '!'
// sorts below every character of an escaped key, so the rows of another
// logical RowKey never fall in the range, whether it extends rk ("day2",
// "day!2", "day.") or not; rk itself may be any string (at most about 1,000
// characters once escaped).
//
// A property's part is keys.Bucket(name, Parts): it depends on the name and
// Parts only, never on the other properties, so every write puts it in the
// same row and a single-property update needs no read. Every part row
// exists (some may be empty), and each row carries VersionProperty, the
// identity of the whole-entity write that wrote it. These reserved names
// (VersionProperty, PartsProperty and reserved.WriteProperty), like every
// name under reserved.PropertyPrefix, are refused in user data
// (ErrInvalid, table.ErrInvalidEntity) and are never decoded into T; the
// RowKey parts
// "h" and "p" mark the rows of a wide entity. Keep wide entities apart from
// other entities of the same partition and RowKey prefix.
//
// # Consistency
//
// Every write is one entity group transaction, atomic: Insert, Update with
// table.Replace and Modify write the header and every part row; Delete
// removes them all; Update with table.Fields or table.Merge (a merge)
// merges into the part rows holding its properties and into the header.
// Every write changes the header's ETag, which is the ETag of the whole
// entity: Update and Delete take it for
// optimistic concurrency (or azcore.ETagAny), and a write conditioned on an
// older ETag fails with table.ErrPreconditionFailed, whatever changed.
//
// A whole-entity write replaces every part row (unconditionally) in the
// transaction that replaces the header on the ETag condition: the
// transaction applies whole or not at all, so no row of another version, and
// no row of an old layout, can survive it (no orphans).
//
// A merge without an ETag (azcore.ETagAny) is the guide's "a single
// merge suffices to change one day": one transaction, no read, merging
// only the named properties (table.Fields) or those the value holds
// (table.Merge). Concurrent merges of different
// properties never lose each other's changes; of the same property, the
// last one wins. It cannot duplicate a property in two rows, since no write
// moves a property to another part: its part depends only on its name and
// the layout, and a Store configured with another Parts finds no row at its
// keys, so its transaction applies nothing, and it then writes into the
// stored layout (see Layout changes). It does change the header's ETag,
// so a whole-entity writer that read before it fails instead of silently
// overwriting it. With an ETag it applies only to the version read.
//
// Get is one range query. The service runs a query against a snapshot:
// other transactions' changes are seen whole or not at all ("all other
// queries executing in parallel at the same time will not see the result
// of the transaction, since they will be working off a prior snapshot",
// the Windows Azure Table whitepaper), and in this package's tests Azurite
// never showed a query part of a transaction. Get also checks that every part row carries
// the header's version (and sits in its part, and no row is missing or
// extra), and reads again when not, so even a query that is not a snapshot
// never returns a mix of two whole-entity writes. An entity's rows (at most
// 100) fit one page of 1,000, but the service may end a page early (a page
// gets at most 5 s of work) and continue it with a continuation token: such
// a read of several pages is not atomic, so Get then reads the header again
// after the last page and, if its ETag changed (any write, merges
// included, came in between), reads again. So Get returns one version of
// the entity with that version's ETag: by the service's snapshot within a
// page, by the versions against whole-entity writes, and by the header's
// ETag across pages.
//
// # Cost in round trips
//
//	Get                       1 (a range query); +1 header read when the
//	                          service splits it into pages; again if a
//	                          write came between the pages
//	Insert                    1 (one transaction of Parts+1 inserts)
//	Update, Replace, with an  1 (one transaction: Parts+1 replaces)
//	  ETag or azcore.ETagAny     (the layout is known, no read)
//	Update, Fields or Merge   1 (a merge per part touched + the header's)
//	Delete                    1 (Parts+1 deletes)
//	Modify                    2 (Get + Update), +2 per conflict
//	InsertOps, UpdateOps,     0 (the change travels in its Apply's one
//	  DeleteOps                  transaction)
//	ModifyOps                 1 (a Get)
//	ErrNotFound of Update     2 (the transaction, then a header read
//	  or Delete                  telling "missing" from "another layout")
//	an entity of another      3 (transaction, header read, transaction
//	layout                       for the stored layout)
//	a lost response           +1 read to settle it (table.Submit)
//
// # Cosmos DB
//
// Supported. The Cosmos DB Table API returns a query's rows in no key
// order: Get sorts the rows it read (one entity's, at most 100) by key
// before it checks them, so it reads the same version at the same cost.
// Its limits are the table's [table.Profile]'s: a transaction holds 2 MB
// there (half of Table Storage's 4 MiB), a part 2 MB of JSON, a RowKey 255
// bytes (a logical RowKey must leave room for the parts' suffixes); writes
// beyond them fail before the network. Its consistency across pages of a
// query is not documented: the header's ETag check after a read of several
// pages applies there too.
//
// # Limits
//
// One entity must fit one transaction, and each row one entity, as the
// table's [table.Profile] has them (the numbers below are Table Storage's;
// Cosmos DB's differ where said):
//
//   - Parts at most 99: the header and 99 parts are the 100 operations of
//     a transaction (MaxBatchOps);
//   - each part at most 251 properties (MaxProperties, 252, less
//     VersionProperty) and 1 MiB as the service counts it (strings in
//     UTF-16; on Cosmos DB 2 MB of JSON), so at most 99 × 251 = 24,849
//     properties in all when the names spread evenly; a name goes to
//     keys.Bucket(name, Parts), so give Parts headroom (a write whose part
//     would overflow is refused);
//   - the transaction at most 4 MiB of request body (MaxBatchSize; 2 MB on
//     Cosmos DB), as batchplan.Size bounds it: the JSON of every
//     row plus 1,024 bytes and six times its keys' length per row, plus
//     512. With 100 rows and short keys that leaves about 4,080,000 bytes
//     for the rows' JSON (names, values, type annotations): up to about 3
//     MiB of binary values (base64 takes 4 bytes for 3) or 4 MiB of ASCII
//     text (half that on Cosmos DB). A part holds 1 MiB as the service
//     counts it (binary bytes as they are, strings at 2 bytes a
//     character), so that much takes at least 4 parts of binary data or 8
//     of text;
//   - a change of Parts for a stored entity puts the old and the new part
//     rows in one transaction: old + new + 1 operations, at most 100.
//
// Every limit is checked before the network: a write that would break one
// sends nothing and fails with ErrInvalid (which matches table.ErrInvalid)
// and the sentinel naming what was wrong: table.ErrTooLarge (sizes and
// counts), table.ErrInvalidKey (keys), table.ErrInvalidEntity (property
// names, reserved ones among them, and values, as for any entity).
//
// # Large values
//
// A wide entity does not offload values to blobs, as patterns/largeentity
// does and patterns/secondaryindex can (its Options.Large): a wide entity
// is many values read together by one range query, and each value already
// fits a property (64 KiB, checked as for any entity); a value beyond that
// would make every read of the entity wait for a blob, and would have to
// share the transaction's 4 MiB with the parts. Keep such a value in a
// largeentity Store under the entity's keys, read when it is needed:
// largeentity's InsertOps and UpdateOps upload it first and give its
// pointer's write as a table.Change, which a Table's Apply can send in one
// transaction with other changes of the partition.
//
// # Write outcomes
//
// Each write is one table.Submit transaction, so it has the core's three
// outcomes: applied, not applied, or errors.Is(err, table.ErrOutcomeUnknown).
// When a transaction's response is lost and the retry policy's resend
// answers 409 or 412, Submit settles it by reading the header's write
// history: an Insert, or a write conditioned on an ETag, is then reported
// applied (Result.Verified) or not, never both and never twice. A verified
// write returns the header's ETag, as any write does, empty only when the
// entity was written again since (table.Result): the header is the first
// operation of every transaction, the one a resend fails at and the table
// package verifies and returns the ETag of. Writes with
// azcore.ETagAny are idempotent: the resend applies the same values again
// (as with table.Upsert, a delayed first attempt may land after a later
// write). A lost Delete leaves nothing to read: ErrOutcomeUnknown, which
// also matches table.ErrNotFound.
//
// # Crash points
//
// Each write is one transaction, so a process that stops at any point
// leaves the entity in its old or its new version, whole:
//
//	stopped                                   stored entity
//	before the transaction is sent            the old version
//	after it is sent, before the answer       the old or the new version;
//	                                          the caller sees
//	                                          ErrOutcomeUnknown
//	between Modify's read and its write       the old version
//	between a layout fallback's read and      the old version
//	  its transaction
//
// # Trust
//
// A read checks that the rows in the entity's range form one version
// written by this package: a header with a valid PartsProperty first,
// exactly that many part rows at their keys, each of the header's version,
// each property in the part its name belongs to; anything else is
// ErrInconsistent, never a value. Every row of an entity is in its own
// partition and every read and write names it, so a writer holding a SAS
// scoped to other partitions cannot read, change or forge an entity of
// this one; one scoped to this partition can write any of its rows and so
// forge its entities (consistently versioned rows read as an entity), as
// it could any row of the partition.
//
// # Layout changes
//
// Every operation assumes the layout of its Store's Parts. An entity
// stored with another Parts is still read correctly (the header records
// its layout). A write finds none of its rows at the keys it expects (the
// transaction applies nothing and answers 404), reads the header, and
// redoes the write for the stored layout: a whole-entity write then moves
// the entity to the Store's layout, deleting the old part rows in the same
// transaction; a merge and Delete act on the stored layout. Such a
// write costs two more round trips; keep Parts fixed for a table. (Should
// the first transaction's response be lost as well, the table package may
// settle it by making the header's ETag stale, a fence: a conditional
// write then ends in ErrPreconditionFailed, not applied; re-read and
// retry, as after any conflict.)
package wideentity
