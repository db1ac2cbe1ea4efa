// Package indexentity is the design guide's index entities pattern
// (pattern 4): to find every entity that shares a non-unique value (all
// employees named Jones) without a scan, keep, for each value, the list of
// the ids of the entities that have it, and look the list up with one read.
//
// The guide keeps the list in one of three places: an index entity in the
// entities' partition (strong), an index entity in another partition or
// table, or a blob (both eventually consistent). This package implements
// the first; the eventual ones follow on patterns/eventual.
//
// An Index is declared over a table.Table[T] with the indexed value as a
// function of T (Options.Value). Its writes, Insert, Update and Delete,
// change an entity and keep the lists; Lookup returns the ids of a value,
// LookupEntities the entities, read in parallel in the list's order.
//
//	byName, err := indexentity.New(employees, &indexentity.Options[Employee]{
//		Name:  "LastName",
//		Value: func(e *Employee) string { return e.LastName },
//	})
//	_, err = byName.Insert(ctx, Employee{Department: "Sales", ID: "000223", LastName: "Jones"})
//	joneses, err := byName.LookupEntities(ctx, "Sales", "Jones")
//
// # Layout
//
// An index entity holds its list in string properties ListProperty+"00",
// ListProperty+"01", ... (Ids00, Ids01, ...), each at most 64 KiB (32,768
// UTF-16 code units) of whole RowKeys, each followed by '/', sorted. A key
// cannot contain '/' (the service refuses it), so the encoding needs no
// escaping. Its keys: PartitionKey = the entities', RowKey =
// keys.Join(KeyPrefix, Name, value), which starts with
// table.ReservedPrefix, so typed queries of the table skip it (it never
// decodes into T). An empty list is no index entity: the write that
// empties a list deletes it.
//
// # Limits
//
// Checked before the network: keys and values as the table package checks
// them, a value whose index key would pass 1,024 characters
// (table.ErrInvalidKey), Options (ErrInvalid). One index entity holds at
// most 1 MiB as the service counts it (strings at 2 bytes a character),
// less the room kept for the core's write history (table.WriteProperty, so
// that lost responses stay verifiable): about 74,000 ids of 6 characters,
// 8,589 of 60. A write whose list would pass that is refused after the read
// and before its transaction, with table.ErrTooLarge.
//
// # Consistency
//
// Strong. The guide's procedure, step by step. Insert: (1) read the index
// entity of the value and its ETag; (2) one transaction inserts the entity
// and inserts the index entity, or replaces it If-Match the ETag read; (3)
// on a concurrency failure start again at (1). Delete: read the entity (to
// learn its value and ETag), read the index entity, one transaction
// deletes both or deletes the entity and replaces the index entity, each
// If-Match. Update that renames (Jones -> Smith): read the entity, read the
// two index entities, one transaction over the three entities, each with
// its ETag. A concurrency failure is a 412 (or a 409 when two writers
// create one index entity) on an index entity, or on the entity when the
// caller gave azcore.ETagAny; the loop starts again through Options.Retry
// (default DefaultRetry: full jitter, which measured best under
// contention), and Result.Conflicts counts the new starts. A 412 on the
// caller's own ETag is ErrPreconditionFailed, at once. Every transaction is
// atomic, so at every moment each entity's id is in exactly the list of
// its value.
//
// # Write outcomes
//
// Every write has the core's three outcomes: applied, not applied, or
// errors.Is(err, table.ErrOutcomeUnknown). A transaction whose response
// is lost is resent by the retry policy, and the core settles the resend's
// 409, 412 or 404 by reading the write history of the entity or an index
// entity (every index entity keeps room for it), so such writes are
// reported applied (Result.Verified), never failed, and no id is added
// twice. Unknown outcomes are never retried by the ETag loop. One case
// cannot be settled: a transaction of deletes only (the entity and its
// emptied index entity) whose response is lost leaves nothing to read;
// Delete then reports ErrOutcomeUnknown (which also matches
// table.ErrNotFound), and the entity and its id are gone together or
// neither.
//
// # Cost in round trips
//
//	Insert                          2 (index read + transaction), +2 per conflict
//	Update, value unchanged         2 (entity read + transaction)
//	Update, renamed                 4 (entity read, 2 index reads in parallel,
//	                                transaction), +4 per conflict
//	Delete                          3 (entity read, index read, transaction)
//	Lookup                          1 (a point read of the index entity)
//	LookupEntities                  1 + 1 per id (point reads, Concurrency at a time)
//	+1 read whenever a lost response must be settled (package table)
//
// # Crash points
//
// Every write ends with one transaction, so a process that stops at any
// point leaves each entity and its id together:
//
//	stopped                                   state
//	before or between the reads               unchanged
//	after the reads, before the transaction   unchanged
//	transaction sent, answer lost             entity and lists changed together, or
//	                                          not at all (ErrOutcomeUnknown only when
//	                                          the core cannot settle it)
package indexentity
