// Package transfer exports tables to blobs, imports (restores) them,
// copies tables to tables across accounts and services, and verifies that
// two tables, or a table and an export, hold the same entities: the
// backup, restore and move that AzCopy v10 does not offer for tables.
//
//	sum, err := transfer.Export(ctx, tableClient, containerClient, "backups/orders/2026-11-29", nil)
//	sum, err = transfer.Import(ctx, containerClient, "backups/orders/2026-11-29", restoredClient, nil)
//	sum, err = transfer.VerifyExport(ctx, containerClient, "backups/orders/2026-11-29", restoredClient, nil)
//	sum, err = transfer.Copy(ctx, storageClient, cosmosClient, &transfer.Options{Ranges: 8})
//	sums, err := transfer.ExportTables(ctx, serviceClient, []string{"orders", "ordersByEmail"}, containerClient, "backups/2026-11-29", nil)
//
// examples/transfer is the same as a program an operator runs.
//
// # When to use it
//
// To back up a table or a PartitionKey range of it into blob storage and
// restore it, to move a table between accounts or between Azure Table
// Storage and the Cosmos DB Table API (both ways), and to check that a
// restore or a move is complete and equal. Every row goes: the
// application's entities and the rows and properties tablekit's patterns
// keep beside them (index copies, commit records, blob pointers: rows
// whose keys start with ~tk~, properties whose names start with Tk), so
// that a restored table is one the patterns accept as their own.
//
// With Options.Blobs and TargetBlobs the blobs that rows point at
// (patterns/largeentity) go with them (see Blobs below).
//
// Not for: a point-in-time snapshot (see the guarantee below; Cosmos DB's
// continuous backup, or an application quiet during the export, gives
// one), the write history tablekit keeps per entity (its TkWrites property: it
// identifies writes to the source table, settles their lost responses
// there, and means nothing elsewhere; a restored entity starts a fresh
// one, as an upsert does), or replicating a table continuously.
//
// # Format
//
// An export under a prefix is a manifest and chunks. The manifest,
// <prefix>/manifest.json, is JSON: "format" ("tablekit-transfer/1"),
// "table", "profile" (the source service's profile name), "from", "to",
// "since" (the Options it was made with), "blobs" (see Blobs),
// "started", "ended", "complete" (false until every range is read to its
// end), "guarantee" (the text of the guarantee below), and "ranges": per
// PartitionKey range its "from", "to", "next" (the cursor to resume
// from), "done", and "chunks", each with its "name", "entities",
// "rawBytes" (uncompressed), "bytes" and "sha256" (hex SHA-256 of the
// blob). The chunks, <prefix>/r<range>-<n>-<16 hex digits unique to the
// upload>.jsonl.gz, are gzip-compressed JSON lines, one entity a line,
// every property with its EDM type (chunks under the prefix that the
// manifest does not name are uploads of crashed runs, never read: delete
// them at will; <prefix>/blobs/ holds large entities' values, see Blobs):
//
//	{"PartitionKey":"Sales","RowKey":"000223","Timestamp":"2026-11-29T03:41:07.1234567Z",
//	 "Properties":[["Age","Edm.Int32",41],["Id","Edm.Int64","9223372036854775807"],
//	 ["Photo","Edm.Binary","AAEC/w=="],["Score","Edm.Double",2.5]]}
//
// The types are Edm.String, Boolean, Int32, Int64 (as a string), Double
// (NaN and the infinities as strings), DateTime (UTC, 100 ns), Binary
// (base64) and Guid: lossless for every type the table codec knows.
// Properties are sorted by name, so an entity has one encoding. One caveat
// comes from the service, not the format: Azurite returns a whole-number
// Edm.Double (2.0) as the JSON number 2 without a type, which reads as
// Edm.Int32 (see table.Dynamic); Azure returns 2.0.
//
// # Blobs
//
// A large entity's row holds, in place of each large value, a pointer
// (the property TkBlob<name>: a blob's name, size and SHA-256); the blob
// is in its Store's container, named after the Store's Prefix and the
// row's keys. Options.Blobs names the source's container and Prefix
// (default: the table's name, as the Store's). Export then reads the blob
// of every pointer and stores it beside the chunks, once per content, as
// <prefix>/blobs/<its SHA-256 in hex> (the manifest's "blobs" is the
// Prefix), before the chunk that holds its row. Import and Copy write each
// blob to Options.TargetBlobs under the name the target's Store gives it
// (its Prefix, default the target table's name; the row's pointer is
// renamed when the Prefixes differ), with the Store's metadata (for its
// Sweep), then the row: the blobs of at most 100 rows (a transaction's
// worth) before those rows, so that a restored row never points at a
// missing blob and is written well within the target Store's Grace (an
// hour by default) of its blobs, which its Sweep would otherwise take for
// orphans. A crash in between leaves only blobs that the resume writes
// again (each name holds one value, so a write again writes the same
// bytes) or the Store's Sweep deletes. Copy refuses a target of the same
// container and Prefix as the source (the two tables would share blobs
// that either Store deletes).
//
// Blobs are read under the Store's own rules: a pointer is followed only
// when a Store with that Prefix could have written it for that row (a
// name in the directory of the row's own keys; a size of 1 to
// largeentity.MaxValueSize, and a blob longer than its pointer says is
// refused before anything is allocated), and the blob's SHA-256 must
// match. A row whose pointer is not such (a tenant's row naming another
// entity's blob), whose blob differs, or whose blob is gone while the
// row, read again, still points at it, is left out, listed in
// Summary.Rejects with the reason, and the call returns ErrRejected
// after transferring everything else; an export records them in its
// manifest ("rejects", "rejected"), and Export with Resume of a complete
// export reports them again. A blob gone because its row changed after
// the scan read it (largeentity deletes a blob only once no version
// points at it) makes the row be read again, in largeentity's loop: the
// new version, with its blobs, is carried; a row deleted meanwhile is not
// (as the scan guarantee allows). Verify, with both, compares a row's
// valid pointers by their values' sizes and SHA-256 (names differ between
// Stores), counts a pointer of the second table that its Store would not
// follow as a change, and reads every blob of the second table, checking
// it; VerifyExport with TargetBlobs does the same against an export that
// holds blobs.
//
// # Guarantee
//
// An export, copy or verify of a table that is being written is a scan,
// not a snapshot (recorded in every manifest):
// an entity that exists for the whole scan and is not changed is read
// exactly once, as stored; one written during the scan is read in its
// state before or after the write; one inserted or deleted during it may
// be missing. Each entity is consistent; nothing holds across entities.
// Import and Copy write each entity with an upsert that replaces it
// whole, so running either again gives the same table (entities of the
// target that the source does not hold are left alone), and a resume
// that writes a chunk or page again is harmless. Transactions are
// atomic; a chunk or a page is several transactions, and a crash between
// them leaves some written, which the resume writes again.
//
// # Incremental exports
//
// On Table Storage, Options.Since exports only the entities whose
// Timestamp is at or after it: pass the previous export's start (its
// Summary.Started, or "started" in its manifest): every write after that
// has a later Timestamp, as long as the exporting host's clock and the
// service's agree (allow for skew by passing an earlier time; an entity
// exported twice is harmless, as imports are upserts). Deletions are not seen: an incremental export holds
// changed and new entities only, and restoring is the full export's
// import followed by each incremental one in order. Cosmos DB's Table API
// answers a Timestamp filter with no rows, so there Since is refused
// (table.ErrUnsupported) before any request: use full exports, or Cosmos
// DB's own continuous backup for point-in-time restore.
//
// # Trust
//
// An export read back is untrusted input (anyone with write access to
// the container may have altered it). The manifest is capped at 64 MiB
// and decoded strictly (unknown fields refused); every chunk name must be
// the one Export gives its place, and sizes are checked against caps
// (256 MiB a chunk, compressed and not) before anything is allocated; a
// chunk is read whole, its length and SHA-256 checked against the
// manifest, then every line decoded strictly (known members once each, a
// known EDM type per property with a value of that type, no system or
// annotation names, no duplicates, lines of at most 16 MiB, the counts
// and sizes the manifest states) before any entity of it is written.
// Anything else is ErrCorrupt. The SHA-256 detects corruption and
// truncation, not a forger who rewrites the manifest too: keep exports
// where only the exporting identity can write. Errors never carry a
// shared access signature or account key (internal/redact).
//
// # Rejects
//
// Import and Copy check every entity against the target's profile
// (table.Profile: key lengths, RowKey of at most 255 bytes and the
// property names id, rid, etag and resourceid on Cosmos DB, entity and
// value sizes, property counts) before it is sent. An entity the target
// cannot hold is never part of a transaction: it is listed, with its keys
// and the reason, in Summary.Rejects, and the call returns ErrRejected
// after writing everything else. A transaction the service itself refuses
// because of one entity (400, 413) applies nothing; that entity is
// rejected and the rest sent again. Nothing is dropped silently.
//
// # Parallel ranges
//
// Options.Ranges splits the PartitionKey range into up to that many
// ranges read at once (Options.Concurrency at a time), without reading
// the table twice: single-row queries probe candidate boundaries, which
// works on Cosmos DB too (a probe asks only whether a range holds a row):
// 93 probes for the keys' first character (printable ASCII, and one
// boundary for all else), then, when fewer ranges than wanted hold rows,
// 93 more per first character found, for the second. The ranges are
// groups of the non-empty candidates, so they hold about equal numbers of
// distinct prefixes, not of entities. Each range has its
// chunks and cursor in the manifest and resumes on its own.
//
// # Across machines
//
// When a table outgrows one machine, N processes on N machines share one
// export, import or copy through a queue of ranges (package eventual's
// Queue and Worker): DistributeExport, DistributeImport or DistributeCopy
// puts one intent per range on the queue, and every process runs an
// eventual.Worker of that queue with ExportHandler, ImportHandler or
// CopyHandler, which does the ranges it is given. The worker renews a
// range's lease (its message's visibility) while the range is worked; a
// process that dies stops renewing, and the range is delivered again, to
// any process.
//
// An export's ranges are its manifest's: a delivery continues the range
// from the cursor recorded there. Every manifest write is conditioned on
// the version read (the blob's ETag) and records a chunk only for its
// range at the position its writer started from, so the manifest records
// each chunk, and each range, exactly once: a process whose lease expired
// while it still ran finds its range moved on, and its delivery fails (to
// be delivered again, finding the range done or continuing it). The
// process that finishes the last range marks the export complete.
//
// An import's ranges are the export's: a delivery writes the range's
// chunks that the import's checkpoint does not list, and adds each to it
// once written, with the entities of it the target rejected, by a write
// conditioned on the checkpoint's ETag (re-read and merged when another
// process wrote it first; a chunk it lists already is not added again).
// Once the queue is drained, Import with Resume writes whatever is left
// (nothing, unless an intent was poisoned) and reports the rejects of the
// whole import, which the checkpoint records.
//
// A copy's ranges are PartitionKey ranges of the source found as Copy
// finds them; a delivery copies its range whole (again, after a crash:
// upserts give the same table). The copy is done when the queue is
// drained. A range holding entities the target cannot hold is copied but
// for them and its delivery fails with ErrRejected naming them: it is
// copied again at each delivery, then poisoned, and eventual's
// Queue.Poisoned lists it with them. examples/transfer runs all three as
// the verb with -queue on one machine, then work on each.
//
// # Sets of tables
//
// Tables that belong together (a rotation's periods, which
// rotation.Tables.Periods names; an index table beside its primary; an
// application's tables) are exported as one set by ExportTables: a list,
// <prefix>/tables.json ("format" "tablekit-transfer-tables/1", "tables",
// "started"), written before anything else, then each table exported
// after the other as Export exports it, to <prefix>/<name>. ImportTables
// and VerifyExportTables follow the list: they check it as untrusted
// input (valid names, none twice, at most 1,000), read every table's
// manifest (complete, of the table the list names) before writing
// anything, and restore or compare each table into the table of the same
// name, or the name Options.Rename gives (rotation periods "logs202611"
// renamed "restoredlogs202611" are the periods of the rotation
// "restoredlogs"); ImportTables creates the target tables, and refuses a
// TargetBlobs.Prefix when several tables hold blobs (their Stores would
// share them). ExportedTables reads a set's list. Before the list is
// written, ExportTables reads each table once: a missing table is refused
// with nothing written. One table of a
// set is an ordinary export: Import or VerifyExport it at
// <prefix>/<name>. A set is a scan per table, no more a snapshot across
// its tables than across a table's rows: a secondary index exported while
// its primary was written may differ from it by those writes, which
// secondaryindex.Check finds and Rebuild repairs after the restore. A set
// is exported by one process (each of its tables with Ranges); a table
// too large for one is exported on its own with DistributeExport.
//
// # Cost in round trips
//
//	Export         1 per page (ChunkBytes/4096 entities, 1 to 1,000),
//	               1 per chunk, 1 per manifest write (one per chunk, one
//	               at the start, one at the end); + probes with Ranges;
//	               with Blobs, 2 per blob (a read, a write), + 1 point
//	               read and 2 per blob of a row read again
//	Import         1 manifest + 1 checkpoint read, then per chunk: 1 read,
//	               ceil(n/100) transactions per partition of its n
//	               entities (more past the profile's 4 MiB or 2 MB), 1
//	               checkpoint write
//	               (with TargetBlobs, 2 per blob: a read, a write; the
//	               transactions of each 100 rows apart)
//	Copy           1 per page read + a transaction per 100 consecutive
//	               entities of one partition of the page (with Blobs, 2
//	               per blob)
//	Verify         1 per page of each table (with Blobs, 1 per blob of
//	               the second)
//	VerifyExport   1 manifest + 1 per chunk + 1 per page of the table
//	               (with TargetBlobs, 1 per blob of the table)
//	DistributeExport  the probes, 1 manifest read and 1 write, 1 enqueue
//	               per range
//	ExportHandler  as Export per page and chunk, + the worker's (a dequeue
//	               per up to 32 ranges, a lease renewal per third of the
//	               visibility timeout, a delete per range), + 1 read per
//	               manifest write another process got in first
//	DistributeImport  1 manifest read, 1 checkpoint write (with Resume, a
//	               read), 1 enqueue per range with chunks left
//	ImportHandler  1 manifest and 1 checkpoint read per delivery, as Import
//	               per chunk, + the worker's, + 1 read per checkpoint write
//	               another process got in first
//	DistributeCopy the probes, 1 enqueue per range
//	CopyHandler    as Copy per page, + the worker's
//	ExportTables   1 list read; for a new set, 1 read per table (a check)
//	               and 1 list write; then each table's Export
//	ImportTables   1 list read, per table 1 manifest read and 1 create
//	               table, then each table's Import
//	VerifyExportTables  1 list read, per table 1 manifest read, then each
//	               table's VerifyExport
//
// Memory: Export and Import hold one chunk per range at a time (Import
// one chunk); Copy a page and Concurrency transactions' rows per range;
// Verify a key and a 32-byte hash
// per entity of the first side; with blobs, at most Concurrency blobs
// more per call (each read whole, to check it before it is written; per
// delivery for a handler, so up to the worker's concurrency times that).
//
// # Crash points
//
// A process may die anywhere; these are the step boundaries, each tested
// (a crash injected there, then the call run again with Options.Resume,
// then Verify):
//
//	operation        crash after              state left                          resume
//	Export           manifest written         chunks listed, cursors saved        reads each range from its
//	                                                                              cursor
//	Export           a page's blobs uploaded  blobs no chunk names yet            reads the page again, uploads
//	                                                                              its blobs again (same names)
//	Export           chunk uploaded           chunk n not in the manifest         uploads chunk n again (a new
//	                                                                              name), then records it
//	Import           chunk read               nothing of chunk n written          reads chunk n again
//	Import           chunk's blobs written    blobs no row points at yet          writes them again, then the
//	                                                                              rows
//	Import           chunk written            chunk n written, not checkpointed   writes chunk n again (upserts)
//	Import           checkpoint written       chunk n checkpointed                starts at chunk n+1
//	Copy             a transaction's rows     the rows so far written (several    copies again from the start
//	                 written                  transactions at once)               (upserts; or a narrower
//	                                                                              From/To)
//	DistributeExpor  manifest written         ranges not all enqueued             DistributeExport with Resume
//	t                                                                             enqueues every range not done
//	ExportHandler    mid-range (dies)         range's chunks so far recorded      the lease expires; the next
//	                                                                              delivery continues the range
//	ExportHandler    lease lost, still runs   another process continues           its next manifest write is
//	                                                                              refused; its delivery fails
//	DistributeImpor  checkpoint reset         ranges not all enqueued             DistributeImport with Resume
//	t                                                                             enqueues every range with
//	                                                                              chunks left
//	ImportHandler    mid-range (dies)         chunks so far checkpointed, one     the lease expires; the next
//	                                          maybe written                       delivery writes the rest
//	DistributeCopy   some ranges enqueued     a partial copy                      DistributeCopy again (ranges
//	                                                                              run twice: upserts)
//	CopyHandler      mid-range (dies)         some of the range's rows written    the next delivery copies the
//	                                                                              range again
//	ExportTables     list written             a set with no table exported        ExportTables with Resume
//	                                                                              exports every table
//	ExportTables     in a table (as Export)   tables before it complete, it       ExportTables with Resume: the
//	                                          partly exported                     done tables at once, then it
//	                                                                              from its manifest
//	ImportTables     in a table (as Import)   tables before it written, it        ImportTables with Resume: each
//	                                          partly                              table from its checkpoint
//
// A lost response of a transaction is settled by Table.Submit's read; one
// it cannot settle is an error, and the resume writes the chunk again.
//
// # Cosmos DB
//
// All four verbs work on both services and between them: reads take no
// key order for granted (Verify compares by key, cursors are the
// service's own), writes are checked against the target's profile (2 MB
// transactions on Cosmos DB). Since is refused there (see Incremental
// exports).
package transfer
