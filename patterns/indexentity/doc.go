// Package indexentity is the design guide's index entities pattern
// (pattern 4): to find every entity that shares a non-unique value (all
// employees named Jones) without a scan, keep, for each value, the list of
// the ids of the entities that have it, and look the list up with one read.
// The guide keeps the list in one of three places, and so does an Index:
//
//	store                       Options             consistency   lookup
//	same partition (option 2)   neither             strong        one partition
//	another partition or table  Table (+ Queue)     eventual      all partitions
//	  (option 3)
//	a blob (option 1)           Blobs (+ Queue)     eventual      all partitions,
//	                                                              lists of any size
//
// An Index is declared over the [table.Table] that stores the entities as
// they are (a *table.Table[T]: their keys are T's, or the table's
// Options.Keys), with a name and the indexed value as a function of T (a
// string, a whole number or a bool, as T holds it), both required and so
// parameters of New; nil Options is the same-partition store. Its writes,
// Insert, Update and Delete, change an entity and keep the lists; FindIDs
// returns the ids of a value, Find the entities (each a [table.Entity],
// with its ETag), read in parallel in the list's order. A lookup's value
// has the value function's type (an int32 field's index is looked up with
// an int32): another type is ErrInvalid, naming the index and the type
// wanted, with nothing sent.
//
//	byName, err := indexentity.New(employees, "LastName", func(e *Employee) string { return e.LastName }, nil)
//	_, err = byName.Insert(ctx, Employee{Department: "Sales", ID: "000223", LastName: "Jones"})
//	for e, err := range byName.Find(ctx, "Sales", "Jones") {
//		...
//	}
//
// # Composing writes
//
// InsertOps, UpdateOps and DeleteOps return a write as a [table.Change],
// to join other patterns' writes of the entity's partition in one
// transaction (see "Composing patterns" in package table). They read what
// the write reads (the same-partition store: the lists; Update and Delete:
// the entity) and condition each op on the version read; the change is
// sent by a Table's Apply, all or none, and a write in between fails the
// transaction with nothing applied (its error says a list changed): make
// the change again, as the writes' ETag loops do. An eventual store's
// change carries its intent: apply it with eventual's Queue.Apply on the
// Index's Options.Queue, whose worker runs Handler.
//
// # When each store fits
//
// Same partition: the entities of one partition (one department) looked up
// by value, always exact. Each list lives in an index entity beside the
// entities, written in the same entity group transaction as the entity, so
// an entity and its id never disagree. The cost: every write reads the index
// entity first, writers of one value contend for its ETag, a list is limited
// to one entity (about 1 MiB of ids, see Limits), and lookups are per
// partition.
//
// Another partition or table: organisation-wide lookups (every Jones of the
// company), and index writes spread over one partition per value instead of
// loading the entities' partitions. The lists follow the entities
// eventually, through patterns/eventual: a write commits the entity and an
// intent together, and a worker brings the lists in line. Same 1 MiB limit
// per list.
//
// A blob: like the other eventual store, for lists that may pass 1 MiB (a
// value shared by hundreds of thousands of entities): one blob per value,
// written with the blob's ETag. A lookup downloads the whole list.
//
// # Layout
//
// Index entities (both table stores) hold their list in string properties
// ListProperty+"00", ListProperty+"01", ... (Ids00, Ids01, ...), each at
// most 64 KiB (32,768 UTF-16 code units) of whole ids, each id followed by
// '/', sorted: the entity's RowKey in the same-partition store,
// keys.Join(PartitionKey, RowKey) in the others. Neither can contain '/'
// (the service refuses it in keys), so the encoding needs no escaping.
// Their keys start with KeyPrefix, which starts with reserved.Prefix:
//
//	same partition      PartitionKey = the entity's, RowKey = keys.Join(KeyPrefix, Name, value)
//	another partition   PartitionKey = keys.Join(KeyPrefix, Name, value), RowKey = KeyPrefix
//	blob                name keys.Join(Name, value), one id per line
//
// so typed queries of the table skip them (they never decode into T), and
// another partition means one partition per value. An empty list is no
// index entity and no blob: the write that empties a list deletes it.
//
// # Limits
//
// Checked before the network: keys and values as the table package checks
// them; keys this package cannot take (ErrInvalid and
// table.ErrInvalidKey): an empty PartitionKey, keys under
// reserved.Prefix (an entity there could take the place of an index
// entity), a value whose index key (or blob name) would pass 1,024
// characters; New's name, value function and Options (ErrInvalid). One
// index entity holds at most 1 MiB as the service counts it (strings at 2
// bytes a character), less the room kept for the core's write history
// (reserved.WriteProperty, so that lost responses stay verifiable): 74,853
// ids of 6 characters, 8,589 of 60. In the same-partition store, a write whose list would pass that is
// refused after the read and before its transaction, with
// table.ErrTooLarge naming the blob store; in another partition or table,
// the worker's pass fails with that error and the intent ends in the poison
// queue (the entity stays written): use blobs for values that common. Blob
// lists are limited to MaxBlobSize (256 MiB, a blob's single upload:
// millions of ids; a write past it fails with table.ErrTooLarge, in the
// worker's pass, like a list too large for an index entity), and tested at
// 100,000 ids; every change of a blob list downloads and uploads the whole
// list.
//
// # Cosmos DB
//
// Supported: every read and write of a list is a point operation by key
// (or a blob's), so the Cosmos DB Table API's unordered queries do not
// matter, and Find fetches the entities by key. An index entity's limit
// is the table's [table.Profile]'s: 2 MB of JSON on Cosmos DB (about
// 10,000 ids of 200 characters, four times Table Storage's 1 MiB counted
// in UTF-16), and RowKeys of at most 255 bytes there, which bound the
// same-partition store's ids. The queue and the blob store need a Storage
// account beside it. The eventual stores' lag is Cosmos DB's consistency
// level's as well as the worker's.
//
// # Consistency
//
// Same partition: strong. The guide's procedure, step by step. Insert:
// (1) read the index entity of the value and its ETag; (2) one transaction
// inserts the entity and inserts the index entity, or replaces it If-Match
// the ETag read; (3) on a concurrency failure start again at (1). Delete:
// read the entity (to learn its value and ETag), read the index entity,
// one transaction deletes both or deletes the entity and replaces the index
// entity, each If-Match. Update that renames (Jones -> Smith): read the
// entity, read the two index entities, one transaction over the three
// entities, each with its ETag. A concurrency failure is a 412 (or a 409
// when two writers create one index entity) on an index entity, or on the
// entity when the caller gave azcore.ETagAny; the loop starts again through
// Options.Retry (default: full jitter, which drains a burst
// of contending writers fastest), and Result.Conflicts counts the new
// starts. A 412 on
// the caller's own ETag is ErrPreconditionFailed, at once. Every
// transaction is atomic, so at every moment each entity's id is in exactly
// the list of its value.
//
// Eventual stores: a write commits the entity and an intent in one
// eventual.Queue.Commit (the intent runs if and only if the entity's write
// applied, whatever crashes), naming the values whose lists may change: the
// entity's value before the write (read first, and the write conditioned on
// that version, so it is exact) and after it. The worker (Handler, run by an
// eventual.Worker) reconciles from the source of truth: it reads the entity,
// puts its id in the list of the value it has now and takes it out of the
// lists of the intent's other values, writing only what differs (each list
// with its ETag, again on a conflict), then reads the entity again, and
// starts over if it changed meanwhile, so that a pass never leaves a list
// agreeing with a version that a later write replaced before the pass
// ended. Duplicate, late and reordered intents are harmless: each run
// leaves the lists as the entity is. Stale ids are found without scans: a
// value's list can only hold an entity's id wrongly if the entity had that
// value, and every write that moved it away named it in its intent. Until
// the worker ran, a lookup may miss new ids and return stale ones; Find
// reads every entity and returns only those that have the value. Every write of an indexed entity must go through the Index (as
// with any index).
//
// # Trust
//
// A list read back is followed only if this Index could have written it:
// its list properties are strings, a blob is UTF-8 text of at most
// MaxBlobSize (a larger one is refused before it is read past, whatever
// size it declares), and every id is that of an entity the Index accepts
// (valid keys, a PartitionKey, neither key under reserved.Prefix). In
// the same-partition store an id is a RowKey of the list's own partition,
// so a list can name no entity elsewhere; in the eventual stores it may
// name any partition of the entities' table (the lists are
// organisation-wide), and a lookup given a PartitionKey returns only that
// partition's ids. Anything else is ErrCorrupt, never ids.
// Find returns only entities that have the value when read. The
// handler refuses an intent naming keys the Index does not write, before
// reading anything; otherwise it reconciles from the entity as stored, so
// a forged intent can only make lists agree with the entities.
//
// A writer holding a SAS scoped to some partitions of the entities' table
// can, in the same-partition store, rewrite those partitions' index
// entities (add or hide ids of their own entities, or make them
// ErrCorrupt), never another partition's list. The eventual stores keep
// lists in partitions of their own or in blobs, which such a writer cannot
// reach; a writer of those (the index table or the container) can hide ids
// or add ids of any partition, which Find follows only to
// entities that have the value. Errors of the blob client are redacted:
// they never carry a SAS signature.
//
// # Write outcomes
//
// Every write has the core's three outcomes: applied, not applied, or
// errors.Is(err, table.ErrOutcomeUnknown). A transaction whose response
// is lost is resent by the retry policy, and the core settles the resend's
// 409, 412 or 404 by reading the write history of the entity or an index
// entity (every index entity keeps room for it), so such writes are
// reported applied (Result.Verified; a Delete returns no error), never
// failed, and no id is added twice. Unknown outcomes are never retried by
// the ETag loop. One case
// cannot be settled, in the same-partition store: a transaction of deletes
// only (the entity and its emptied index entity) whose response is lost
// leaves nothing to read;
// Delete then reports ErrOutcomeUnknown (which also matches
// table.ErrNotFound), and the entity and its id are gone together or
// neither. In the worker, an unknown outcome of a list write is settled by
// reading the list again: it either holds the change or gets it written
// again (the comparison is the verification; nothing is written blindly).
//
// # Cost in round trips
//
//	same partition
//	  Insert                          2 (index read + transaction), +2 per conflict
//	  Update, value unchanged         2 (entity read + transaction)
//	  Update, renamed                 4 (entity read, 2 index reads in parallel,
//	                                  transaction), +4 per conflict
//	  Delete                          3 (entity read, index read, transaction)
//	  FindIDs                         1 (a point read of the index entity)
//	  Find                            1 + 1 per id (point reads, Concurrency at a time)
//	  InsertOps, UpdateOps,           the reads of the write (1; 1, or 2 renamed;
//	    DeleteOps                     2); the change travels in its Apply's
//	                                  transaction
//	another partition or a blob
//	  Insert                          3 (eventual.Queue.Commit: reserve, transaction, release)
//	  Update, renamed                 4 (entity read + Commit)
//	  Update, value unchanged         2 (entity read + replace; no intent)
//	  Delete                          4 (entity read + Commit)
//	  InsertOps                       0; UpdateOps, DeleteOps 1 (the entity's read):
//	                                  Queue.Apply commits the change
//	  FindIDs                         1 (index entity read or blob download)
//	  Find                            1 + 1 per id
//	  worker, per intent              2 entity reads + 1 list read per value named
//	                                  + 1 write per list changed, + the worker's
//	                                  own (message delete, commit record removal)
//	+1 read whenever a lost response must be settled (package table)
//
// # Crash points
//
// Same partition: every write ends with one transaction, so a process that
// stops at any point leaves each entity and its id together:
//
//	stopped                                   state
//	before or between the reads               unchanged
//	after the reads, before the transaction   unchanged
//	transaction sent, answer lost             entity and lists changed together, or
//	                                          not at all (ErrOutcomeUnknown only when
//	                                          the core cannot settle it)
//
// Eventual stores: Commit's own crash table (package eventual) guarantees
// that an intent runs if and only if its entity write applied. The
// worker's handler:
//
//	stopped (or failed)                       state              next delivery
//	after the first entity read               unchanged          runs the pass
//	after some list writes                    some lists fixed   fixes the rest (writes
//	                                                             only what differs)
//	after the list writes, before the         lists fixed        finds nothing to fix
//	  second entity read
//	the entity changed during the pass        some lists may     the pass starts again at
//	                                          follow the old     once (within Options.Retry),
//	                                          version            then by redelivery
//
// A list write whose answer is lost is read back before anything else is
// decided.
package indexentity
