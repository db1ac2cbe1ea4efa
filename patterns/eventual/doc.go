// Package eventual is the design guide's eventually consistent
// transactions pattern (pattern 3): a change that spans partitions, tables,
// or a table and a blob is recorded as a durable intent on an Azure queue,
// and a worker performs its idempotent steps, deleting the message only
// when every step succeeded. The queue redelivers whatever a crash or an
// error interrupted, so the change completes.
//
// tablekit's cross-partition patterns stand on it: the inter-partition
// secondary index (patterns/secondaryindex) and index entities in another
// partition, another table or a blob (patterns/indexentity);
// examples/archive uses it alone, for the guide's archiving flow. (Large
// entities need no queue: patterns/largeentity explains why.)
//
// # When to use it
//
// When one logical change must touch more than one partition (an entity
// group transaction covers one partition of one table: use it instead
// whenever it can), and readers can tolerate the change becoming visible
// step by step. Not for changes that must be isolated: there is no
// isolation, a reader may see the intermediate state (the employee in both
// tables, or in neither index). Not for work that cannot be made
// idempotent.
//
// # Setting up
//
// [New] takes the queue of intents and a poison queue, both required (a
// worker cannot run without somewhere to put what it gives up on, and a
// queue client cannot make a client of another queue), and optional
// [Options]: a blob container for large payloads, the tables Commit may
// write to, the commit window; New(q, poison, nil) is a Queue for Enqueue
// alone. Tables are given as their *aztables.Client: the package stores
// no entity type of its own, only its commit records (reserved rows)
// beside the primaries, and Commit takes operations made by any
// [table.Table] of that client. [NewWorker] takes the Queue and one
// handler per kind, both required, and optional [WorkerOptions] (nil:
// defaults).
//
// # Starting a flow
//
// A [Kind] ties a name to a payload type; [Kind.New] makes a [Draft] intent
// with a fresh ID (the idempotency key) and its creation time. Then either:
//
//   - [Queue.Enqueue] puts it on the queue (1 round trip), for flows that
//     start with no primary write: the guide's "archive employee 456".
//   - [Queue.Commit] writes a primary change and starts the intent with it,
//     all or nothing: reserve (the message is enqueued invisible for the
//     commit window), commit (the primary's operations plus a commit record
//     in one entity group transaction), release (the message is made
//     visible). No crash point loses a committed intent or runs an
//     uncommitted one, and nothing is found by scanning tables.
//   - [Queue.Apply] is Commit for a write composed of several patterns'
//     changes ([table.Change]: "Composing patterns" in package table): the
//     changes' ops, checked together with the commit records by
//     Table.Apply's check, and their intents; without intents it is one
//     [table.Apply] transaction.
//
// Payloads are JSON (encoding/json) inside a base64 envelope, so any text
// survives the queue's XML. A payload too large for a message (64 KiB of
// text, about 47 KiB of JSON) goes to a blob in Options.Blobs, a claim
// check named intents/<id>/<32 hex digits unique to the upload> (a
// Commit's with "commit-" before the digits), up to MaxPayloadSize (4
// MiB); without Blobs, or larger, it is refused before anything is sent.
//
// When its intent is done, the worker empties the claim check instead of
// deleting it: an enqueue whose response was lost and which the retry
// policy sent again leaves two messages naming one claim check, and the
// second finds it empty and is dropped as done, so the intent runs once
// and nothing is poisoned (a Commit's duplicates are told apart by its
// commit record, before the claim check is read). An empty claim check
// means done; a missing one is a permanent failure (the intent is
// poisoned): someone deleted it, or Sweep removed it, emptied, after a
// duplicate waited longer than SweepOptions.OlderThan. Sweep deletes the
// emptied ones. Blobs no message refers to (a crash between the upload
// and the enqueue), the claim checks of Commits that did not apply after
// a crash or an unknown outcome, and those of poisoned intents (kept for a
// retry) stay: give the container a lifecycle rule that deletes blobs
// under intents/ older than any intent waits.
//
// # Handlers and the guarantee
//
// A [Worker] dequeues up to 32 messages at a time, runs each intent's
// handler ([Kind.Handle]) with bounded concurrency, renews the message's
// lease while the handler runs, and deletes the message only after the
// handler returned nil. Handlers must be idempotent and should reconcile from the
// source of truth (design rule 3): read the current primary, compute what
// the other side should hold, fix what differs, then make sure the fix was
// of the current version: read the primary again and go round when its
// ETag changed (a few rounds, then return an error: the worker tries again
// after a backoff), or make the fix's last write conditional on the version
// read (a delete If-Match it, as an archiving handler's delete of the
// original). Two runs for the same entity, of two of its intents, may
// overlap on two workers, and without that check the run that read the
// older version can write last, leaving the other side stale with no
// intent left to mend it (secondaryindex and indexentity check so). The core's idempotent
// steps help: [table.Table.Upsert] with [table.Replace] (insert or
// replace: the same value written twice is the same entity),
// [table.Table.Delete] with table.ErrNotFound taken as success (gone is
// done), and [table.Table.Insert] with table.ErrAlreadyExists taken as
// done (a lost response is settled by the write history, so an insert
// whose first attempt applied reports success, not a conflict). Then:
//
//   - Delivery is at least once: after a crash, an expired lease or a lost
//     response an intent may run again, possibly after a newer intent for
//     the same entity (no order). A running handler's lease is renewed; when
//     a renewal cannot finish before the lease ends, the handler's context
//     is cancelled, since another worker may take the intent from then on:
//     two runs overlap only while a handler ignores its context.
//   - Effects are effectively once: an idempotent handler run twice leaves
//     what it leaves run once, and a reconciling handler that checks its
//     fix as above, run late or beside another, converges to the truth.
//   - A Commit's intents run if and only if its primary batch applied.
//   - A handler that keeps failing is retried with backoff and, after
//     WorkerOptions.MaxDeliveries, moved to the poison queue with its last
//     error; a committed one is marked in its commit record, so Pending
//     lists it, and Poisoned shows the poison queue.
//
// # Commit records
//
// A commit record is a row in the primary's partition whose RowKey starts
// with "~tk~intent~" followed by the intent's ID, and
// which names the message Commit reserved. Queries of patterns/table skip
// such rows, so they never reach an application's T. A record exists from
// the primary's batch until the worker finishes the intent; Pending lists
// the records still there.
//
// Before running a Commit's intent the worker reads its record: it runs
// the intent only if the record is committed and names this very message
// (or is poisoned: an operator re-enqueues a poisoned intent as a new
// message), and then removes that record by its ETag. A message whose
// record names another message (the duplicate of a reserve whose response
// was lost and which was sent again) is dropped. A released message
// whose record is gone is done (the record is removed only after the
// handler succeeded) and is dropped. When a worker finds a message that
// was never released and whose record does not exist (the batch never
// applied, or has not arrived yet) it inserts an aborted record in its
// place: the primary's batch, which inserts the record, then fails if it
// arrives late, so the primary write and its intent stay all or nothing.
// Aborted records are rare (they need a crash, an unknown outcome during
// Commit, or a duplicate reservation); Sweep deletes old ones.
//
// # Cosmos DB
//
// Supported for the tables: the primary's table may be a Cosmos DB Table
// API table (its commit records are rows of it); the queue, and the claim
// checks' container, are a Storage account's (Cosmos DB has neither).
// Commit's transaction follows the table's [table.Profile] (2 MB there:
// a larger one is ErrInvalid before anything is sent, no message
// reserved), from the client's endpoint, or Options.Profile for an
// account behind a proxy or a custom domain. Nothing depends on query order: the worker reads records by
// key, Pending lists what it finds, and Sweep, since a filter on Timestamp
// matches nothing on Cosmos DB, reads every aborted record there and keeps
// the old ones by their Timestamp. The worker's reads of commit records
// assume that a read sees every write before it, from any client (Table
// Storage is strongly consistent); give a Cosmos DB account the Strong
// consistency level, since below it a stale read could take a released
// intent whose record it does not see yet for done (the simulation does
// not model staleness).
//
// # Cost in round trips
//
//	Enqueue                 1 (+1 blob upload for a claim check)
//	Commit, 1 intent        3: reserve, batch, release (2n+1 for n intents)
//	Apply                   as Commit for the changes' intents; 1 without
//	Commit not applied      +1 (a read of the commit record, which tells a
//	                        refused batch from one applied and resent) +1
//	                        per intent (the reserved message deleted)
//	worker, per intent      the handler's own, +1 message delete,
//	                        +2 for Commit's intents (the commit record
//	                        read, then removed), +2 for claim checks (the
//	                        blob read, then emptied), and a share of a
//	                        dequeue (1 per up to 32)
//	worker, dropping        +1 message delete after the record read (a
//	                        Commit's) or the claim check's read, +1 aborted
//	                        record insert for an unreleased message whose
//	                        record is missing
//	Sweep                   a filtered scan per table, 1 batch per 100
//	                        aborted records of a partition; 1 listing per
//	                        5,000 claim checks, 1 delete per emptied one
//	failure                 +1 (the error recorded, the retry scheduled)
//	poison                  +2 (+2 to mark a committed commit record: a
//	                        read, then an update If-Match)
//	lease renewal           1 per VisibilityTimeout/3 of handler time
//
// # Crash table
//
// Commit (the process dies, or the call returns an error, between steps):
//
//	crash point                 state left                       repaired by
//	before the reserve          nothing                          -
//	reserved, before the batch  invisible message, no record     the worker, when the window ends:
//	(or a reserve failed after                                   aborted record, message dropped
//	a lost response)
//	batch outcome unknown       invisible message; record iff    the worker, when the window ends:
//	                            the batch applied                runs it iff the record exists
//	batch applied, no release   invisible message, record        the worker runs it when the
//	                                                             window ends
//	released                    visible message, record          the worker runs it now
//
// Worker (the process dies between steps; the lease then expires and the
// message is delivered again):
//
//	crash point                         state left                  next delivery
//	dequeued, before the handler        invisible message           runs it
//	during the handler                  some of its effects         runs it again (idempotent)
//	handler done, before the claim      effects, claim check,       runs it again, then finishes
//	  check is emptied                    record, message
//	claim check emptied, before the     effects, empty claim        finds it done: removes the
//	  record removal                      check, record, message      record, drops the message
//	handler done, before the record     effects, record, message    runs it again, then finishes
//	  removal (no claim check)
//	record removed, before the message  effects, message            released: done, dropped;
//	  delete                                                        not released: no record, so
//	                                                                aborted record and dropped
//	poison queued, before the delete    message in both queues      poisons it again (a duplicate
//	                                                                in the poison queue)
//
// Lost responses are handled at each write: an enqueue or a reserve whose
// response is lost is sent again by the retry policy, which leaves a
// duplicate message: an enqueued intent's runs again, unless it has a
// claim check the first already emptied (then it is dropped as done); a
// reserved one's is dropped because
// the commit record names the other message (or ruled out once the record
// is gone). A reserve whose last attempt fails too is Commit's error
// matching table.ErrNotApplied, not table.ErrOutcomeUnknown: the batch was never
// sent, and the messages its attempts may have left are the "reserved,
// before the batch" row above (never released, so each is ruled out when
// the window ends: an aborted record, the message dropped, the handler
// never run). The batch's outcome is settled by the core's verification
// (patterns/table); a release whose response is lost leaves a visible
// message, or one visible when the window ends; a message delete or record
// removal that finds nothing after a lost response is success.
//
// # Observability
//
// Enqueue, Commit, Apply, Pending, Sweep and Poisoned are spans
// (eventual.Enqueue, eventual.Commit, ...) with the attributes of every tablekit operation
// (tablekit.table, tablekit.partition, tablekit.round_trips,
// tablekit.retries, tablekit.outcome: see patterns/table's Observability),
// from Options.Telemetry's providers (default: the global ones). Enqueue,
// Commit and Apply put the W3C trace context (traceparent, tracestate) of their
// span in the intent's envelope (about 60 bytes, inside the message's
// size limit); a worker's run of a delivery is an eventual.Handle span,
// a child of that span when the envelope's trace context is valid and
// sampled (not a link: one trace then shows the write, the Commit, each
// delivery and the handler's writes, across processes), with
// tablekit.intent.id, tablekit.intent.kind (the intent's kind when one of
// the worker's handlers has it, else "unknown": a message's kind is
// whatever its writer chose), tablekit.intent.deliveries,
// tablekit.message.id and the delivery's end (tablekit.intent.event:
// processed, failed, poisoned, dropped, lease lost). The handler's context
// carries that span, so its own operations are its children. Whether a
// delivery is recorded is the worker's decision, not the message's: a
// message without trace context (written by an older version, or
// untraced), with one that is not valid, or with one whose sampled flag
// is off (a write the application did not sample, or a queue writer's
// attempt to hide a delivery under a parent-based sampler), runs as any
// other, its span a root that the worker's own sampler decides on. Run
// and Drain make no span of their own (a worker polling an empty queue
// records nothing).
//
// Metrics: tablekit.eventual.intents (by tablekit.intent.kind, bounded as
// on the span, and tablekit.intent.event), tablekit.eventual.deliveries (a
// histogram of the deliveries an intent took when processed or poisoned),
// tablekit.eventual.lag (seconds from the intent's message's insertion
// into the queue, as the queue service records it, to the intent's
// completion: how far behind an index may be; the service records the
// second, and the creation time the message claims, Kind.New's, places it
// within that second and is otherwise ignored, since a queue writer sets
// it; an intent re-enqueued from the poison queue counts from its new
// message), tablekit.eventual.lease.renewals and
// tablekit.eventual.lease.lost, and, on request (Queue.ObservePending, which costs a scan per collection),
// the gauges tablekit.eventual.pending, tablekit.eventual.pending.age and
// tablekit.eventual.queue.depth. Log records (the Telemetry's Logger,
// default slog.Default()): one per worker event, debug for processed and
// renewed, warn for failed, dropped and lease lost, error for poisoned,
// with the span attributes' names (tablekit.intent.kind is the message's
// own there); their error texts, like every text of a span, hold no
// RowKey, query string or secret (see patterns/table's Observability).
//
// # Trust
//
// Messages are read back from a queue that others may write to, and nothing
// in them is followed before it is checked. On every delivery the worker
// refuses, and poisons without reading or writing anything named in it: a
// text longer than a message, a message that is not a version 1 envelope
// with a 32-hex-digit id and a valid kind, a claim check not named
// intents/<its own id>/<32 hex digits> (or a Commit's claim check, named
// with "commit-", without a commit reference), a commit reference whose
// table is not one of Options.Tables or whose PartitionKey is not a valid
// key, an abandon count above its deliveries. A trace context is only
// parsed: a queue writer can choose the trace a delivery's span joins,
// nothing else (not whether it is recorded: see Observability). Nor does
// a message set the worker's telemetry otherwise: a kind no handler has is
// recorded as "unknown", and the lag is measured from the message's
// insertion as the service records it. A claim check larger than
// MaxPayloadSize is poisoned without being read. A commit record is acted
// on only by the message it names, or by any message once poisoned (see
// Commit records); the only rows the worker itself writes or removes for a
// message are commit records of the message's own id (RowKey
// "~tk~intent~" + id), in the named partition of one of
// Options.Tables. Errors, log lines, events and stored errors carry no
// shared access signature.
//
// A queue writer (no key signs messages: access to the queue is the trust
// boundary for intents) can therefore start intents of any kind with any
// payload, as Enqueue does; replay an enqueued intent's message it has read
// (the handler runs again, as after any duplicate delivery); re-enqueue a poisoned intent, as
// an operator does, even with a payload of its own, whose success removes
// the poisoned record; and have a worker write an aborted commit record for
// an id of its choice in any application partition of Options.Tables (not
// a reserved one, such as an index entity's: such a reference is forged,
// since no Commit can target it, and is poisoned unread): a reserved row,
// invisible to queries and removed by Sweep, which makes a Commit of that
// very id fail with nothing applied (ids are random; a Commit's id appears
// on the queue only after its batch, and before it only in its claim
// check's name). It cannot make a worker read, empty or delete any blob but
// an enqueued intent's claim check of its message's own id (a Commit's is
// read only by the message its commit record names, or once poisoned by a
// re-enqueued one), nor read more than
// MaxPayloadSize of it; run, finish or mark poisoned another message's
// committed intent; lift an aborted record (so no late batch applies
// without its intent); or write any other row. A tenant holding a
// partition-scoped table SAS writes rows, commit records included, in its
// own partitions only, and so can affect only the intents committed there.
package eventual
