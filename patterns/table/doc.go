// Package table is the typed core every tablekit pattern builds on: a
// Table[T] of Go structs over an *aztables.Client, with exact EDM types,
// explicit optimistic concurrency, safe filters, lazy queries with
// resumable cursors, a batch planner and parallel fan-out. It layers on the
// Azure SDK rather than hiding it: Client returns the raw client, service
// errors still unwrap to *azcore.ResponseError, and clients built here are
// ordinary aztables clients.
//
// # Quick start
//
//	svc, err := table.NewServiceClientFromConnectionString(connStr, nil) // or NewServiceClient(url, azidentityCred, nil)
//	if err != nil { ... }
//	if err := table.CreateTable(ctx, svc, "Employees"); err != nil { ... }
//	employees, err := table.New[Employee](table.NewClient(svc, "Employees"))
//	if err != nil { ... }
//	_, err = employees.Insert(ctx, Employee{Department: "Sales", ID: "000223", FirstName: "Jo"})
//	e, err := employees.Get(ctx, "Sales", "000223", nil) // e.Value, e.ETag
//	e, err = employees.Modify(ctx, "Sales", "000223", func(e *Employee) error { e.Age++; return nil }, nil)
//
// The constructors here install the retry package's policy (retry.Default)
// in place of azcore's; a client you build yourself gets it with
// retry.Default.ApplyTo(&opts.ClientOptions). ParseConnectionString gives
// the service URL and shared key for minting SAS (SASURL).
//
// # Clients
//
// tablekit takes ordinary *aztables.Client values, and must know three
// things aztables keeps to itself: the table's name (errors, spans, and
// packages such as eventual address tables by name), the service's
// endpoint, which decides its Profile (Table Storage sorts by key; the
// Cosmos DB Table API does not, and has other limits), and a pipeline to
// send the requests it builds itself. It never reads another module's
// unexported state, so it knows them for the clients it builds:
// NewServiceClientFromConnectionString and NewServiceClient build, beside
// the SDK's service client, a pipeline of tablekit's own with the same
// authentication (Shared Key Lite, signed as the SDK signs; Microsoft
// Entra ID tokens of the storage or Cosmos DB audience; a SAS) and the
// same client options (retry policy, transport, logging, tracing);
// NewClient(svc, name) and NewClientFromSASURL make table clients known
// by name and service. On Table Storage, Tables of such clients send
// their point operations, queries and transactions through that pipeline
// from the codec's bytes (the direct path); on Cosmos DB they use the
// SDK's methods.
//
// A client the application builds with aztables itself works too, with
// the SDK's methods, no name, and Portable, the strictest profile (both
// services' limits, no key order assumed; never Storage, whose order a
// Cosmos DB account does not keep), which tablekit says once in
// slog.Default's log. Describe gives such a client its name and profile.
// svc.NewClient(name) on a service client tablekit built also makes such
// a client: use NewClient(svc, name).
//
// # When to use it
//
// Use it for any entity you read or write from Go: it replaces hand-written
// JSON with a codec that keeps Int64, Double, DateTime, Binary and Guid
// types, it validates every limit of the real service before the network
// (Azurite accepts much that Azure rejects), and it makes the guide's
// implementation considerations (point and range queries, projection,
// continuation tokens, entity group transactions, merge or replace,
// optimistic concurrency, shared access signatures, parallel queries) one
// call each.
//
// # One library: the contract every package follows
//
// This package owns the entity contract the pattern packages share:
//
//   - One field model: the struct mapping of Table (tag grammar, key
//     roles, property names) is the one every package reads; no package
//     parses `table` tags itself, and a name a package lets its users
//     choose (an index's property, a field to encrypt) is checked by the
//     same rules. Keys under "~tk~" and properties under "Tk" are reserved
//     for the patterns.
//   - One envelope: every read returns an [Entity] (keys, ETag, value) or a
//     struct that embeds one and adds only its package's own fields; every
//     write returns a [Result] or a struct that embeds one.
//   - One key rule: a value carries its keys (T's key fields, or a key
//     function: Options.Keys, here and in the packages that take one);
//     an operation addressed by key takes pk, rk.
//   - One error family: every validation error, in every package, matches
//     [ErrInvalid] (each package's own ErrInvalid matches it too, and the
//     core's errors a package passes on match the package's); key errors
//     also match ErrInvalidKey. Texts are one line; secrets are redacted.
//   - One rule for the table a package takes: a *Table[T] when its rows are
//     exactly T's entities (logtail, buckets, indexentity, and this
//     package), a *Table[Dynamic] when it writes rows of its own making
//     from T (secondaryindex's copies, wideentity's parts, largeentity's
//     pointers, dataseries' slots, encryption's sealed values; T is then
//     New's explicit type parameter). Other clients and inputs without which
//     the pattern cannot work are positional; options are always nil-able.
//   - One service profile (Profile): the limits and behaviours of Table
//     Storage and the Cosmos DB Table API, in one place.
//
// The same act has the same shape wherever it exists. In the table, E is
// the package's read envelope (an [Entity], or a struct that embeds one
// and adds only its package's fields) and R its write result (a [Result]
// or a struct that embeds one); scope... are the strings that choose a
// partition, log or index, or the client that chooses a table; from and
// to have one type; [, x] is an argument a package has only where it has
// that choice, and opts is always a nil-able *Options. A remark in
// parentheses after a package says where it departs from the shape (each
// departure has its reason beside the rules) or what it returns
// differently. The rules are data in
// internal/cmd/apisnapshot's tests, which check every pattern package's
// methods against them and fail when this table is not the one the rules
// and the code give (the "where" column lists exactly the packages that
// have the verb):
//
//	verb      shape                                               where
//	Get       Get(ctx, pk, rk[, opts]) (E, error)                 table, buckets,
//	                                                              dataseries (zeros, not ErrNotFound),
//	                                                              encryption, largeentity,
//	                                                              secondaryindex, wideentity
//	Insert    Insert(ctx, v) (R, error)                           table, buckets, encryption,
//	                                                              indexentity, largeentity,
//	                                                              rotation (ctx, at, v), secondaryindex,
//	                                                              wideentity
//	Upsert    Upsert(ctx, v[, mode]) (R, error)                   table, buckets, encryption,
//	                                                              largeentity
//	Update    Update(ctx, v, etag[, mode]) (R, error)             table, buckets, encryption,
//	                                                              indexentity, largeentity,
//	                                                              secondaryindex, wideentity
//	Delete    Delete(ctx, pk, rk, etag) error                     table, buckets,
//	                                                              dataseries (the whole series),
//	                                                              encryption, indexentity, largeentity,
//	                                                              secondaryindex, wideentity
//	Modify    Modify(ctx, pk, rk, fn[, opts]) (E, error)          table, encryption, largeentity,
//	                                                              secondaryindex, wideentity
//	...Op     InsertOp(v), UpsertOp(v[, mode]),                   table, buckets, logtail
//	          UpdateOp(v, etag[, mode]),
//	          DeleteOp(pk, rk, etag), AppendOp(scope..., v):
//	          the verb's arguments without ctx; Op
//	...Ops    InsertOps(ctx, v), UpdateOps(ctx, v, etag),         dataseries, encryption, indexentity,
//	          DeleteOps(ctx, pk, rk, etag), ModifyOps(...):       largeentity, secondaryindex,
//	          the verb's arguments; (Change, error)               wideentity
//	Lookup    Lookup(ctx, scope..., value[, opts]) (E, error)     secondaryindex
//	Find      Find(ctx, scope..., value[, opts])                  encryption, indexentity,
//	          iter.Seq2[E, error]; value: Lookup's type           secondaryindex
//	Range     Range(ctx, scope..., from, to[, opts])              bloblog (Entry: no keys, no ETag),
//	          iter.Seq2[E, error]                                 buckets, largeentity, logtail,
//	                                                              rotation, secondaryindex
//	RangePage RangePage(ctx, scope..., from, to, cursor[, opts])  buckets, largeentity, logtail,
//	          (Page[E], error): a page and a resumable Next       rotation, secondaryindex
//	ListPage  ListPage(ctx, scope..., cursor[, opts])             secondaryindex
//	          (Page[E], error)
//	QueryPage QueryPage(ctx, q) (Page[T], error): the cursor is   table, encryption
//	          q.Cursor, the page holds what Query yields
//	Latest    Latest(ctx, scope..., n) ([]E, error)               logtail
//	Append    Append(ctx, scope..., v) (R, error)                 bloblog (error: buffered), logtail
//	Check     Check(ctx, scope...[, opts]) (Drift, error),        secondaryindex
//	          Rebuild likewise
//	Sweep     Sweep(ctx, scope...[, opts]) (Swept, error)         eventual, largeentity, rotation
//	Run       Run(ctx) error, Drain(ctx) error                    eventual
//
// Upsert is only where a write needs no read: secondaryindex, indexentity,
// wideentity and largeentity read first to keep indexes, parts or blobs
// right. Update's mode is only where a merge can be right (table,
// encryption, wideentity); the others always write the whole entity. An
// ...Op joins a batch in one partition; an ...Ops is a Change that may
// carry intents (see Composing patterns).
//
// Update takes an explicit ETag everywhere: the one read (ErrPreconditionFailed
// when it changed since) or azcore.ETagAny, the only way to skip the check;
// an empty ETag is ErrNoETag. Modify is a read, fn, and a write with the
// ETag read, again on a conflict, never applied twice.
//
// # Mapping
//
// See Table for the struct rules. In short: key fields are PartitionKey and
// RowKey (or tagged pk and rk), or computed by WithKeys; an embedded Meta
// receives ETag and Timestamp; every other exported field is a property.
// Dynamic reads and writes entities of any shape. ToDynamic and
// FromDynamic convert a T to and from a Dynamic with the same types,
// without the one-entity limits, for patterns that store one value as
// several entities (patterns/wideentity).
//
// # Several entity types in one table, with versions
//
// The guide keeps entities of different types side by side (a partition
// holding a Department and its Employee entities, read by one query) and
// records each entity's type in it. Types does that: register each Go type
// with a name and a version, and write through the *Table[T] Register
// returns; every write records the type, every read resolves it.
//
//	types, _ := table.NewTypes(client, nil)
//	depts, _ := table.Register[Department](types, "Department", nil)
//	emps, _ := table.Register[Employee](types, "Employee", &table.RegisterOptions{
//		Version:  2,
//		Upgrades: []table.Upgrade{table.UpgradeFrom(1, upgradeEmployee)},
//	})
//	for v, err := range types.Query(ctx, &table.Query{Filter: table.PartitionKey("Sales")}) {
//		switch e := v.(type) {
//		case Department: ...
//		case Employee: ...
//		}
//	}
//
// Use it when one partition or one query holds several shapes (the guide's
// heterogeneous entities, patterns that keep several kinds of rows
// together), or when a type's shape evolves and old rows must keep reading.
// A table of one type that never changes shape does not need it.
//
// How a row's type is recorded: the type property (EntityType, valued
// "Employee.2"; the guide's convention, queryable like any property),
// and, if a type has a Prefix, its keys start with it ("EMP_000123"), which
// lets a query select the type by key range and recognises rows written
// without the property. A row's type is its type property, else its key
// prefix, else TypesOptions.Untyped; rows of none are an ErrEntityType, or
// a Dynamic with UnknownAsDynamic, never dropped. A registered Table[T]
// reads only its own type: its queries add a server-side selection by the
// type property or prefix (and skip any other row that still arrives), and
// its Get of another type's row is an ErrEntityType.
//
// Versions: rows of an older version decode into the Go type of that
// version and go through the upgrade functions, one version at a time, so
// they read as the current T; rows of a newer version (written by a newer
// program during a rolling upgrade) are an ErrEntityType, never misread.
// Writes always record the current version. A value read from an older
// version (its Meta records the upgrade) is always written whole, with
// Replace, whatever the Mode; a Fields merge or Merge of a value built
// from scratch cannot know the stored version, so merge such values only
// into rows known to be current (see Register). Stored rows are upgraded by any
// full write, by Get with RegisterOptions.WriteBack, or table-wide by Migrate.
// Every such write is conditioned on the ETag read, so a concurrent
// writer's change is never overwritten: it stands (and Migrate upgrades it
// in turn).
//
// Cost: a mixed query is one round trip per page, like a typed one,
// instead of one query per type; decoding resolves each row's type from the
// scanned properties without a second pass (BENCHMARKS.md). Get with
// WriteBack of an old row: 2 (read, conditional Replace). Migrate: 1 per
// page read plus 1 per transaction of upgrades (100 rows of a partition);
// a row another writer changed or deleted in between costs 2 more (re-read,
// write) and 1 transaction more for the ops rolled back with it.
//
// Migrate crash points, all repaired by running it again from the last
// MigrateProgress.Next (rows are rewritten only while they are of an older
// version, each conditioned on its ETag):
//
//	crash point                              state left                       repair
//	before a page's transactions             page not upgraded                rerun reads it again
//	between transactions of a page           some partitions upgraded         rerun skips them (current version)
//	transaction response lost                settled by Submit's read         none (reported applied or not)
//	after the writes, before Progress        page upgraded, cursor not saved  rerun reads it, writes nothing
//
// Package patterns reserve rows under "~tk~" (commit records,
// index entities); Types' queries skip them as typed queries do.
//
// # Trust
//
// The core checks what it reads and sends: keys and property names are
// validated before the network, every value is decoded by its declared EDM
// type (a row of another type is ErrEntityType, never misread), a write's
// history (TkWrites) keeps only identities of the shape tablekit
// writes, and shared access signatures are removed from every error that
// carries a URL. A writer holding a SAS scoped to some partitions (SASURL's
// key ranges) can write rows only there; it can plant rows that other
// programs read, which is why the pattern packages check references they
// read (see their "Trust" sections) and why application code must not
// trust the contents of a partition others can write.
//
// # Reserved keys
//
// Keys (PartitionKey or RowKey) that start with "~tk~" belong to
// tablekit's patterns. Every write, point read and op of an application's
// Table refuses them with ErrInvalidKey before the network, so an id taken
// from user input ("~tk~ix!Last!Jones") can neither take over nor read a
// pattern's row; queries skip rows whose RowKey starts with it. The pattern
// packages reach their own rows through views that only tablekit's own
// packages can make (internal/reserved).
//
// # Cursors
//
// QueryPage and Pages here, and every ...Page of the pattern packages,
// return a Cursor: a string to resume from, in any process. Cursors often
// reach end users (a web API's page tokens), so:
//
//   - An error quotes at most a cursor's first 16 bytes, and its length;
//     no error text is built for a valid cursor.
//   - Plain (the default), a cursor is readable by whoever holds it: base64
//     of the service's continuation token (on Table Storage the keys of the
//     next entity the query reads, not yet returned; for an index, an
//     indexed value such as an email; on Cosmos DB the service's own token)
//     and of the count toward Limit; the pattern packages' cursors hold
//     keys likewise. Altered, a plain cursor resumes the same listing at
//     another position: never a wider one (the Filter, Select and scope
//     are the caller's, not the cursor's).
//   - Sealed: NewCursorKey makes a key from the application's secret (at
//     least 32 random bytes; older secrets kept for rotation), and
//     Options.CursorKey gives it to a table. Its cursors, and those of every
//     pattern built over it (rotation takes the key in its Options), are
//     encrypted and authenticated (AES-256-GCM) and bound to their table
//     and listing: one shows nothing, and an altered, cut or extended
//     cursor, a cursor of another query or table, and a plain cursor are
//     refused before the network: ErrInvalidFilter here, each pattern
//     package's ErrInvalid there (all match ErrInvalid).
//     Any process whose table has a key of the same secret resumes them;
//     turning sealing on invalidates the plain cursors handed out before.
//
// # Consistency
//
// One entity is strongly consistent. Update and Delete take an ETag: the one
// read with the entity (the write fails with ErrPreconditionFailed if the
// entity changed since; retry with retry.Policy.Do and retry.RetryOn412), or
// azcore.ETagAny to overwrite whatever is there. There is no default: an
// empty ETag is ErrNoETag. Submit's transactions are atomic per transaction:
// ops of one partition travel together, and Atomic groups are never split.
// Across transactions, partitions and tables there is no atomicity:
// package eventual's Commit joins a transaction with durable intents that a
// worker carries out.
//
// # Composing patterns
//
// One logical write often spans patterns: an employee, its index copies,
// its photo, and a log entry recording the change. It is all or nothing
// when it is one entity group transaction, and the patterns make that
// possible by producing operations instead of sending them. Each write
// that can join a composed write has a form that returns a [Change]:
// secondaryindex's and wideentity's InsertOps, UpdateOps, ModifyOps and
// DeleteOps, largeentity's and indexentity's InsertOps, UpdateOps and
// DeleteOps, dataseries' SetOps, SetAllOps, AddOps and DeleteOps,
// logtail's AppendOp (an op: put it in a Change literal, as any Table's
// ops). A Change holds
// the pattern's ops in one partition, the intents it needs for what lies
// elsewhere (the [Intent] interface, which eventual's Draft implements, so
// this package does not depend on eventual), the NotAfter of what it
// prepared, and Explain, which turns its failing op's error into the
// pattern's own (secondaryindex's ErrDuplicate for a taken unique value).
// Then:
//
//   - [Join] checks changes as one transaction before anything is sent:
//     one partition, each entity once, the profile's limits on operations
//     and bytes; an error names the change at fault and, for a limit,
//     every change's share.
//   - [Apply] writes changes without intents in one transaction: 1 round
//     trip, all applied or none.
//   - eventual's Queue.Apply writes changes with intents: their ops and
//     a commit record per intent in one transaction, each intent reserved
//     on the queue before and released after, so the intents run if and
//     only if the transaction applied (2n+1 round trips for n intents).
//
// For example, hiring an employee with a photo and logging it:
//
//	hire, err := employees.InsertOps(ctx, jo) // the photo uploaded first; the employee and its copies
//	entry := table.Change{By: "log", Ops: []table.Op{changes.AppendOp("Sales", Change{What: "hired"})}}
//	_, err = queue.Apply(ctx, client, hire, entry) // or table.Apply when no change has an intent
//
// This is the design's first two consistency rules made one mechanism: in
// one partition, one transaction; across partitions, intents committed
// with that transaction. An ops form reads what it must first (the
// version it replaces, whose ETag conditions its ops: a write in between
// fails the transaction with ErrPreconditionFailed, and the caller makes
// the change again), and prepares before the transaction what cannot be
// in it (blobs, under write-unique names, so a transaction that does not
// apply leaves orphans for a sweep, never a reference to something
// missing; NotAfter keeps a late transaction from pointing at what a
// sweep may have taken). Reads do not compose: they stay the patterns'
// own. examples/directory is the guide's whole employee directory written
// this way, with its crash points tested.
//
// # Write outcomes
//
// Every write, single or in Submit, ends in one of three outcomes, and
// never reports a guess as a fact:
//
//   - applied: the call returns no error (OpResult.Applied in Submit);
//   - not applied: an error that is not ErrOutcomeUnknown: a rejection by
//     the service (ErrAlreadyExists, ErrPreconditionFailed, ErrNotFound,
//     ...), a limit checked before the network, or a request that was
//     certainly not sent or not applied;
//   - unknown: errors.Is(err, ErrOutcomeUnknown). The write may or may not
//     have been applied; do not repeat it blindly.
//
// The difficult case is a lost response: the service applied the write but
// the answer never arrived (a connection reset, a timeout, a 500 or 504).
// The retry policy (retry.Default, installed by ClientOptions and the
// constructors here) resends, and the resend of a non-idempotent write
// answers 409, 412 or 404 although the first attempt succeeded. The policy
// marks such a request as ambiguous, and tablekit settles it with one read
// of the entity: inserts and conditional updates record their identity in
// the entity's write history (TkWrites, one reserved property), so the
// read tells "this write was applied" from "another write won". A
// read-modify-write loop (retry.Do with retry.RetryOn412 over Get and
// Update) therefore never applies a change twice.
//
//	fault (then the policy resends)        what the caller sees
//	no fault                                 the service's answer
//	request dropped before the service      the resend's answer (applied
//	                                         or a definite rejection)
//	response lost: Insert                    applied (Result.Verified),
//	                                         after 1 extra read
//	response lost: Update with an ETag       applied (Verified) or
//	                                         ErrPreconditionFailed, after
//	                                         1 extra read; unknown if more
//	                                         than 8 writes
//	                                         intervened, or v did not carry
//	                                         the Meta read with the ETag
//	every attempt of a conditional write    not applied after 1 read and a
//	failed and the ETag still matches        fence (an empty merge on the same
//	                                         ETag, so that no late attempt can
//	                                         still apply); unknown if the
//	                                         fence fails
//	response lost: Upsert, Update with *     applied (the resend writes the same
//	                                         values; a late first attempt may
//	                                         still land after a later writer's)
//	response lost: Delete                    unknown (and ErrNotFound): a
//	                                         delete leaves nothing to read
//	response lost: Submit transaction        every op applied (Verified) or
//	                                         the resend's failure, after 1
//	                                         extra read of an insert or
//	                                         conditional op; unknown for a
//	                                         transaction of unconditional
//	                                         deletes and updates only (up to
//	                                         2 reads)
//	every attempt lost                       as above, settled by the read
//	context ends while a write is in flight  unknown (no read: the caller's
//	                                         context is over)
//	context ends before a write is sent      not applied (ErrNotApplied in
//	                                         Submit, the context's error)
//
// The read costs one round trip (two for some transactions, plus the fence
// write when a condition still matches), only on the rare ambiguous path.
// An unknown outcome never matches ErrAlreadyExists or
// ErrPreconditionFailed, so a loop that retries on those cannot apply a
// write twice. A client built without the retry package's policy (a plain
// aztables client, whose azcore retry may resend without saying so) is
// settled the same way after a transport error or a 500, 502 or 504, and a
// 412 or 404 answering a conditional write is verified by one read; only a
// 409 answering an insert is taken at face value there. Such a client
// cannot tell a genuine conflict from its own resend, so a 412 on an entity
// whose write history cannot settle it (written by other code, or by an
// unconditional replace) is reported unknown, and Modify stops there: build
// clients with this package's constructors, or retry.Default.ApplyTo, to
// keep read-modify-write loops retrying through contention.
//
// # Cost in round trips
//
//	Insert, Upsert, Update, Delete, Get        1 (+1 read to settle a lost response)
//	Get with Select (projection)              1 (a point query)
//	Modify                                    2 (read + conditional write), +2 per conflict
//	Types.Query, Types.QueryPage              1 per page, every registered type at once
//	Get of an old version with WriteBack      2 (read + conditional Replace)
//	Types.Migrate                             1 per page + 1 per transaction of upgrades
//	QueryPage                                 1
//	Query / Collect                           1 per page (at most 1,000 entities a page)
//	FanOut over n queries                        1 per page of each, Concurrency at a time
//	Join                                      0 (checked locally)
//	Apply of changes                          1 (one transaction), +1 read to settle a
//	                                          lost response
//	Submit of n ops                           1 per transaction: ceil(n/100) per partition
//	                                          when under 4 MiB; Transactions reports it
//	                                          (+1 read per transaction whose response was lost)
//	CreateTable, DeleteTable                  1 (CreateTable waits out TableBeingDeleted;
//	                                          DeleteTable +1 query when every
//	                                          response was lost)
//	SASURL                                    0 (signed locally)
//
// # Limits checked before the network
//
// The limits are the table's Profile's (Storage, Cosmos; see Profile).
// Keys (keys.Validate: no / \ # ? or control characters, at most 1,024
// UTF-16 code units, a non-empty PartitionKey, which the SDK cannot
// address, and on Cosmos DB a RowKey of at most 255 bytes), at most 252
// properties, property names (C# identifiers, at most 255 characters, not
// PartitionKey, RowKey, Timestamp, a name under "Tk",
// an OData keyword, or a name the service reserves), string and binary
// values up to 64 KiB (strings counted as UTF-16), times within
// Edm.DateTime's 1601-9999 (the zero time.Time is stored as no property),
// well-formed GUIDs, entities up to 1 MiB as Table Storage counts them (2 MB
// of JSON on Cosmos DB), and for Submit one partition per atomic group,
// each entity once per transaction, 100 operations and 4 MiB (2 MB on
// Cosmos DB) per transaction. A rejected write names the entity and the limit and sends
// nothing. Queries: at most 15 comparisons per filter
// (maxFilterComparisons), literals of the type of T's field, properties T
// has, a query string under maxQueryLength, and a cursor of the same query.
//
// # Cosmos DB
//
// A table on the Cosmos DB Table API (its endpoint, or Options.Profile: Cosmos)
// follows the Cosmos [Profile]. Point operations, transactions and merges
// work as on Table Storage, under its limits (transactions of 2 MB,
// entities of 2 MB of JSON, RowKeys of 255 bytes, the property names id,
// rid, etag and resourceid refused), through the SDK's methods (no direct
// path). Its queries return entities in no key order, within and across
// pages, and its $top returns any n matches: Query, Pages, QueryPage and
// Types.Query return every matching entity once, in no order, and a
// Limit caps how many (it does not pick the first by key). An ordered
// FanOut is in key order on both services: there each
// query is read whole, sorted, and cut to its Limit (O(range) in memory
// and transfer before the first entity). ListTables sorts the names it
// lists. Migrate needs no order. A filter on Timestamp (which matches
// nothing there) and stored access policies (which do not exist there)
// are ErrUnsupported before the network. Throttling is 429, which the
// retry package retries within its backoff, honouring
// x-ms-retry-after-ms and waiting at least a second without it.
//
// # Errors
//
// Every error is a *Error (or *BatchError for Submit) naming the operation
// and entity, and satisfies errors.Is with ErrNotFound, ErrTableNotFound,
// ErrAlreadyExists, ErrPreconditionFailed, ErrTooLarge, ErrInvalidKey,
// ErrInvalidEntity, ErrInvalidBatch, ErrNoETag, ErrInvalidFilter,
// ErrThrottled, ErrNotApplied, ErrEntityType or ErrUnsupported as fits;
// those found before the network also match ErrInvalid. Batch failures name the failing
// op by its index in the ops given to Submit (OpError), with its keys, status
// and service error code, parsed from the 202 multipart answer the SDK
// reports without a code.
//
// # Observability
//
// tablekit traces and measures itself with the OpenTelemetry API (the
// SDK, exporters and sampling are the application's). Each pattern
// package's Options has a Telemetry field ([Telemetry]: a tracer provider,
// a meter provider and a *slog.Logger; nil means the global providers,
// looked up at each use, and slog.Default()), and each exported operation
// of a pattern that talks to storage is a span named <package>.<Verb>
// (secondaryindex.Insert, eventual.Commit, logtail.Latest, ...) with these
// attributes:
//
//	tablekit.table        the table's name
//	tablekit.partition    the PartitionKey (RowKeys are never recorded:
//	                      they often hold personal data, an email or a
//	                      name; see below for the texts of errors and URLs)
//	tablekit.round_trips  the requests sent, counted by the retry policy
//	                      (retry.Policy.ApplyTo, installed by ClientOptions
//	                      and every client tablekit builds); absent for
//	                      clients without it
//	tablekit.retries      the resends among them (transient failures, and
//	                      conflicts a read-modify-write retried)
//	tablekit.outcome      a write's outcome: applied, not_applied, unknown,
//	                      or verified (a lost response settled by a read)
//
// An error is recorded as the span's status and an exception event. A span
// never holds a RowKey, a query string or a secret, whatever the error
// returned to the caller names: every attribute, event and status text
// that reaches a span through tablekit (those azcore sets on the spans of
// requests included) has every URL cut to its scheme, host and the table,
// queue or container it addresses (the entity's keys, a blob's name, a
// message's id and the query string elided: "http.url" is
// https://account.table.core.windows.net/orders(…)), every quoted string
// elided (this package's and the patterns' errors quote each key, filter,
// cursor and name they give, so a span's status reads table: get orders
// (PartitionKey "…", RowKey "…"): 404 ResourceNotFound), and any other
// shared access signature or account key redacted; the PartitionKey is the
// tablekit.partition attribute. (This package's and the patterns' errors
// never hold a property's value.) Log records' error texts are recorded
// the same way. This package's own operations (Insert, Upsert, Update, Delete, Get, Modify,
// Submit, each query page) make a span only when their context already
// carries a recording span (a pattern's, or the application's), as its
// child in that span's provider; otherwise they allocate nothing for
// telemetry, so point reads and writes, bulk loads and scans cost what they
// cost untraced. Below a traced operation each request is a child span
// ("HTTP GET", with azcore's attributes, its URL cut as above), for table,
// queue and blob clients alike: the operation's context
// carries azcore's tracer to the client's pipeline. An SDK method you call
// under a span of your own is traced when its client has TracingProvider,
// which ClientOptions, NewServiceClient* and tabletest's Scratch* install;
// add it to a client of your own with
//
//	opts.TracingProvider = table.ClientOptions().TracingProvider
//
// Metrics (the meter provider's; the global one for this package's own
// operations): tablekit.writes (by tablekit.operation and
// tablekit.outcome), tablekit.retries (by operation) and tablekit.throttled
// (429, 503 and 500 answers, by operation and http.response.status_code),
// plus package eventual's worker metrics (see there). Metric attributes
// never include tables or keys. Retries and throttling answers are counted
// per operation that counts its requests: every pattern operation, and
// this package's own when traced; an untraced core operation called
// directly counts only its write's outcome (counting its requests would
// cost it an allocation). Log records (the Telemetry's Logger): a
// debug record per operation with the span's attributes (a conflict or a
// transient failure retried with success included), a warning when it
// failed after retries (it gave up); eventual's worker logs its events.
//
// # Performance
//
// The codec reflects over T once; encoding writes JSON straight into a
// pooled buffer and decoding scans the flat entity object without building
// maps: encode plus decode of a 10-property entity takes about 2.4 µs and
// 7 allocations (the decoded values), against 5.7 µs and 23 allocations
// for a tagged struct with encoding/json and 26 µs and 203 for
// aztables.EDMEntity.
//
// Writes, reads, query pages and batches go under the SDK where it costs
// (the direct path): the same REST requests, built from the codec's bytes
// and sent through the client's own azcore pipeline (its authentication,
// retry policy and logging), without the SDK's round trip of every entity
// through map[string]any; inserts ask for no response body, and a query
// fetches its next page while the loop consumes the current one. It needs
// the aztables version tablekit is built with (checked at New); with
// another version, or a Cosmos DB Table API endpoint, the SDK's methods are
// used, with the same results. Against Azurite on two cores (BENCHMARKS.md,
// equal concurrency): bulk loads 1.3 to 1.7 times a careful raw
// SubmitTransaction loop at a fifth of its CPU per entity, scans 2.4 times
// the raw pager, inserts 1.1 to 1.2 times, reads at parity, and bulk loads
// at up to 92% and scans at about 80% of what pre-encoded HTTP gets from
// the emulator.
//
// Decoding checks the stored type: a JSON string is typed by its annotation
// (none means Edm.String), and a number may widen from Int32 to Int64 or
// Double; anything else is an error naming the property, never a silent
// conversion that a later write would store under another type.
package table
