// Package largeentity is the design guide's large entities pattern
// (pattern 11): property values too large for an entity (an employee's
// photo) are stored in blobs, and the entity keeps each blob's name, size
// and SHA-256 in their place.
//
// # When to use it
//
// For entities with a few large values read with the rest: a photo, a
// document, a long description, a big JSON structure. An entity holds at
// most 1 MiB, and a string or binary property 64 KiB; a blob holds
// terabytes. Not for values read or written in pieces (a blob API of
// your own fits that), nor for entities whose many properties make them
// large (the wide entity pattern, patterns/wideentity, splits those over
// rows without a second service), nor when most values are small (each
// offloaded value costs a second round trip to read).
//
// # Mapping
//
// A [Store] of T writes to a *table.Table[table.Dynamic] (the table rule
// of tablekit: a pattern that stores rows of its own making from T, here
// T's properties with pointers in place of its large values, takes a
// Table[Dynamic] and T as New's type parameter) and to a blob container;
// both are New's positional arguments, and a nil *Options means
// defaults:
//
//	staff, err := largeentity.New[Employee](tbl, photos, nil)
//
// T is a struct stored as by table.Table[T] (its field model is
// the mapping of [table.Table]). A value's keys are those of T's key fields, or what
// Options.Keys computes: Insert, Upsert and Update take the value, and
// Get, Modify and Delete the keys; reads return a [Entity], the core's
// [table.Entity] (keys, ETag, value) with the blobs it points at, and
// writes a [Result], the core's [table.Result] with the blobs. Upsert
// reads the stored version's pointers, then inserts v or replaces the
// version read, conditioned on its ETag, again from the read when
// another writer comes between (so it knows which blobs it replaces, and
// a refused attempt leaves no blob behind); Update with azcore.ETagAny
// replaces without that read. The table's merge modes do not apply to
// rows whose pointers and values the Store lays out (a merge would keep a
// pointer beside the inline value that replaced it).
//
// T's chosen fields, []byte, string or `table:",json"` fields tagged
// `largeentity:"offload"` or named in Options.Fields, go to a blob when
// their value is larger than Options.Threshold (as the service counts
// it); fields tagged `largeentity:"always"` go whenever they are not
// empty. When the entity would still exceed 1 MiB, the largest remaining
// chosen values go too. An offloaded property P is replaced by the
// reserved property TkBlobP ("TkBlob" + P) holding
// {"blob":name,"size":n,"sha256":hex}; like every name under
// "Tk", T may not use it (nor may its extra map
// write one). Reads resolve the pointers of every []byte, string and json
// field of T, whatever the Options that wrote them, except Prefix: every
// Store of a table must use the same Prefix (see Trust). A value holds at
// most MaxValueSize (256 MiB, one upload request).
//
// Blobs are named <Prefix>/<hash of the keys>/<property>/<random id>: a
// new name for every value written, so no two writes, concurrent or not,
// ever share a blob, and a blob, once written, never changes. Each
// carries its entity's keys and property in its metadata, for Sweep.
//
// # Consistency
//
// A write uploads the blobs first, each created only if absent, then
// writes the entity, so the entity never points at a blob that is missing
// or half written: a crash in between leaves only unreferenced blobs
// (orphans). Update and Modify replace the entity whole (the Store owns
// its rows' layout, so Update takes no table.Mode) conditioned on its ETag
// as patterns/table does (or unconditionally with azcore.ETagAny), and
// since each write points at its own blobs, a concurrent replace can
// never leave the entity pointing at another writer's half-written value.
// Delete removes the entity, then its blobs. The replaced version's blobs
// stay until Sweep, which deletes blobs that no entity points at and that
// are older than Options.Grace.
//
// Reads read the entity (one point query), then its blobs, and check each
// pointer (see Trust), then each blob's size and SHA-256 against it: data
// that does not match is ErrCorrupt, never returned. A blob can only disappear after its
// entity stopped pointing at it (Delete deletes a version's blobs after
// the version; Sweep keeps what the current version points at), so a
// read that finds a blob gone reads the entity again, and returns the
// version it finds, whole, or table.ErrNotFound. So Get returns one
// version of the entity, whole, or an error.
//
// Why blobs are never swept from under a write: every write that points
// an entity at an existing blob (Modify keeping an unchanged value's
// blob) is conditioned on a version that already points at it, so once
// no version points at a blob, none ever will again; and a write sends
// its entity within Grace/2 of starting its uploads (else
// ErrGraceExceeded, not applied), while Sweep deletes only blobs older
// than Grace. Grace must therefore exceed twice the clock skew between
// the machines that write and the one that sweeps, plus the longest
// request; the default is an hour.
//
// # Trust
//
// A row may have been written by someone else than this package: a
// tenant holding a table SAS scoped to its own partition (table.SASURL)
// can write any property of its own rows, pointers included. A read
// therefore follows a pointer only when it is one this Store could have
// written for that row: valid JSON, a blob name of exactly
// <Prefix>/<hash of the row's own keys>/<the pointer's property>/<32
// lower-case hex digits>, a size of 1 to MaxValueSize and a hex SHA-256.
// Anything else is an error before any blob request: ErrForeignBlob for
// a name outside that directory (a pointer copied from another entity,
// or naming any other blob), ErrCorrupt with table.ErrTooLarge for a
// larger size, ErrCorrupt otherwise; then the blob's Content-Length must
// equal the pointer's size before its content is read, and its SHA-256
// must match after. So such a tenant cannot make a read of its rows
// return another entity's value, nor make Delete (which deletes only the
// blobs of pointers a read would follow), Update or Sweep (which deletes
// only blobs named and labelled as an entity's own, by reading that
// entity) delete or change another entity's blob; it can only spoil the
// rows it can write.
//
// A writer with write access to the container is trusted with the blobs:
// it can overwrite or delete any of them (a read then reports
// ErrCorrupt), but cannot make a read return a value its entity's
// pointer does not hash to, nor allocate more than MaxValueSize per
// value. Errors of the blob service are redacted (internal/redact): a
// SAS in the container client's URL never appears in an error.
//
// RangePage's cursors may reach end users. Plain (the default), a cursor
// is base64 of the service's continuation token: the keys of the next
// entity of the range, not yet returned. Altered, it resumes the same
// range elsewhere. With a CursorKey on the Store's table
// ([table.Options].CursorKey) a cursor is sealed: it shows nothing, and
// any altered character, or a cursor of another range, is ErrInvalid
// before the network. An error quotes at most a cursor's first 16 bytes.
//
// patterns/transfer backs up, restores and copies a Store's table with its
// blobs (its Options.Blobs and TargetBlobs) under these same rules: it
// follows only the pointers a read would follow, checks every blob's size
// and SHA-256 before writing it anywhere, and names the blobs it restores
// as the target's Store does.
//
// # Why no queue
//
// The guide keeps the entity and the blob eventually consistent with a
// queue (pattern 3). The write order above makes one unnecessary: the
// entity is written last, so it is never ahead of its blobs, and what a
// crash leaves behind is garbage that Sweep finds by listing, not a
// change that someone must finish. An asynchronous offload through
// patterns/eventual would not make the foreground write cheaper either:
// the value is too large for the entity and for a queue message (64 KiB),
// so it must be uploaded before anything refers to it, which is this
// package's first step. A queue would add a round trip and a worker, and
// readers would see an entity without its value until the worker ran.
//
// # Composing with other patterns
//
// InsertOps, UpdateOps and DeleteOps give a write as a [table.Change] that
// joins other patterns' changes in one transaction ("Composing patterns"
// in package table): the blobs are uploaded while the change is made,
// before anything refers to them, and the transaction carries the
// pointers. The change's NotAfter (half of Grace after the uploads) keeps
// a late transaction from pointing at blobs Sweep may have taken; a
// transaction that does not apply leaves orphans for Sweep, never a
// dangling pointer.
//
// A Store can also keep the large values of rows another pattern makes:
// give it as patterns/secondaryindex's Options.Large, and the index Store's
// primary rows hold pointers written, read and checked exactly as this
// package's own (blob first, write-unique names, the same Trust checks),
// while this Store's Sweep, reading those rows in its table, removes what
// no row points at.
//
// # Write outcomes
//
// Every write has the core's three outcomes: applied, not applied, or
// errors.Is(err, table.ErrOutcomeUnknown). Each step settles lost
// responses: a blob create resent after a lost response answers 409
// BlobAlreadyExists, which under a write-unique name can only be the
// write's own earlier attempt (applied); the entity write is verified by
// patterns/table from the entity's write history. When the entity write
// certainly did not apply (a conflict, a missing entity, ErrGraceExceeded)
// the write deletes the blobs it uploaded; when its outcome is unknown it
// leaves them to Sweep. A Delete whose response was lost is, as in
// patterns/table, table.ErrOutcomeUnknown (matching table.ErrNotFound);
// its blobs are deleted once a read finds the entity gone.
//
// # Cost in round trips
//
//	Upsert                 Insert's or Update's + 1 read (of the pointers);
//	                       the same again per conflict
//	Insert, Update         1 + 1 upload per offloaded value, the uploads in
//	                       parallel: 2 round trips of latency; 1 when every
//	                       value is inline
//	Get                    1 point query + 1 read per offloaded value, in
//	                       parallel: 2 of latency; 1 when every value is
//	                       inline or GetOptions.Select leaves them out
//	Range, RangePage       1 per page of up to 1,000 entities + 1 read per
//	                       offloaded value, Concurrency at a time ahead of
//	                       the loop
//	InsertOps, UpdateOps   1 upload per offloaded value, in parallel (the
//	                       entity write joins the caller's transaction)
//	DeleteOps              0 (an op; the blobs are left to Sweep)
//	Modify                 Get's + 1 upload per changed offloaded value + 1;
//	                       the same again per conflict
//	Delete                 2 (the pointers read, the conditional delete) + 1
//	                       per offloaded value; with azcore.ETagAny, +2 per
//	                       write that comes between the read and the delete
//	Sweep                  1 per 5,000 blobs listed + 1 point query per entity
//	                       with blobs older than Grace + 1 per orphan deleted
//	a refused entity write +1 delete per blob it uploaded
//	a lost response        +1 read to settle the entity write (patterns/table);
//	                       a blob upload needs none
//
// # Cosmos DB
//
// Supported; the blobs need a Storage account beside it (Cosmos DB has
// none). The Cosmos DB Table API returns a query's rows in no key order:
// Range reads the rows of its range whole and sorts them before yielding
// the first entity (same round trips; memory for the range's rows, not
// their blobs, before the first). Everything else is point operations.
// What stays inline follows the table's [table.Profile]: values are
// offloaded while the entity would exceed 2 MB of JSON there (1 MiB as
// Table Storage counts it); Threshold is bounded by its 64 KiB values.
//
// # Crash points
//
// Insert, Upsert, Update and Modify (the process stops, or the call returns an
// error, between steps):
//
//	stopped                          stored entity           left behind
//	before the uploads               the old version (or     nothing
//	                                 none)
//	during or after the uploads,     the old version         the new blobs: orphans,
//	  before the entity write                                deleted by Sweep after Grace
//	entity write sent, answer lost   the old or the new      when not applied, the new
//	                                 version (the write      blobs: orphans
//	                                 settles which)
//	after the entity write           the new version         the replaced version's blobs:
//	                                                         orphans
//
// Delete:
//
//	stopped                          stored entity           left behind
//	before the entity delete         the entity              nothing
//	after it, before the blob        none                    its blobs: orphans
//	  deletes
//
// Sweep deletes each orphan independently; stopped anywhere, it leaves the
// remaining orphans for the next Sweep.
//
// # Sweep
//
// Sweep costs a listing of every blob under Prefix (5,000 a request, with
// the metadata naming each blob's entity), a point query per entity that
// has blobs older than Grace (projected on its pointers, Concurrency at a
// time) and a delete per orphan: it scales with the number of blobs, and
// reads about one entity per large entity once they are older than Grace.
// Run it rarely (daily, say). Blobs under Prefix that are not named and
// labelled as this package's are never deleted. Prefix belongs to one
// table: two tables sharing a Prefix in one container would sweep each
// other's blobs.
package largeentity
