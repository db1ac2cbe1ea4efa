// Package eventual is the design guide's eventually consistent
// transactions pattern (pattern 3): a change that spans partitions, tables,
// or a table and a blob is recorded as a durable intent on an Azure queue,
// and a worker performs its idempotent steps, deleting the message only
// when every step succeeded. The queue redelivers whatever a crash or an
// error interrupted, so the change completes.
//
// Every cross-partition pattern of tablekit stands on it: the
// inter-partition secondary index, index entities in another partition or
// a blob, large entities, archiving.
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
// # Starting a flow
//
// A Kind ties a name to a payload type; Kind.New makes a Draft intent with
// a fresh ID (the idempotency key) and its creation time. Then either:
//
//   - Queue.Enqueue puts it on the queue (1 round trip), for flows that
//     start with no primary write: the guide's "archive employee 456".
//   - Queue.Commit writes a primary change and starts the intent with it,
//     all or nothing: reserve (the message is enqueued invisible for the
//     commit window), commit (the primary's operations plus a commit record
//     in one entity group transaction), release (the message is made
//     visible). No crash point loses a committed intent or runs an
//     uncommitted one, and nothing is found by scanning tables.
//
// Payloads are JSON (encoding/json) inside a base64 envelope, so any text
// survives the queue's XML. A payload too large for a message (64 KiB of
// text, about 47 KiB of JSON) goes to a blob in Options.Blobs, a claim
// check the worker deletes when the intent is done; without Blobs it is
// refused before anything is sent. A crash between the blob's upload and
// the enqueue leaves a blob no message refers to (intents/<id>): give the
// container a lifecycle rule that deletes blobs older than any intent
// waits.
//
// # Handlers and the guarantee
//
// A Worker dequeues up to 32 messages at a time, runs each intent's handler
// (Kind.Handle) with bounded concurrency, renews the message's lease while
// the handler runs, and deletes the message only after the handler
// returned nil. Handlers must be idempotent and should reconcile from the
// source of truth (design rule 3): read the current primary, compute what
// the other side should hold, fix what differs. The steps Put (insert or
// replace), DeleteIfExists (gone is success) and InsertIfAbsent (a lost
// response settled by the write history) help. Then:
//
//   - Delivery is at least once: after a crash, an expired lease or a lost
//     response an intent may run again, possibly after a newer intent for
//     the same entity (no order). A running handler's lease is renewed; when
//     a renewal cannot finish before the lease ends, the handler's context
//     is cancelled, since another worker may take the intent from then on:
//     two runs overlap only while a handler ignores its context.
//   - Effects are effectively once: an idempotent handler run twice leaves
//     what it leaves run once, and a reconciling handler run late converges
//     to the truth.
//   - A Commit's intents run if and only if its primary batch applied.
//   - A handler that keeps failing is retried with backoff and, after
//     WorkerOptions.MaxDeliveries, moved to the poison queue with its last
//     error; a committed one is marked in its commit record, so Pending
//     lists it, and Poisoned shows the poison queue.
//
// # Commit records
//
// A commit record is a row in the primary's partition whose RowKey starts
// with table.ReservedPrefix + "intent~" followed by the intent's ID.
// Queries of patterns/table skip such rows, so they never reach an
// application's T. A record exists from the primary's batch until the
// worker finishes the intent; Pending lists the records still there. When
// a worker finds a reserved message whose record does not exist (the
// batch never applied, or has not arrived yet) it inserts an aborted
// record in its place: the primary's batch, which inserts the record,
// then fails if it arrives late, so the primary write and its intent stay
// all or nothing. Aborted records are rare (they need a crash or an
// unknown outcome during Commit); Sweep deletes old ones.
//
// # Cost in round trips
//
//	Enqueue                 1 (+1 blob upload for a claim check)
//	Commit, 1 intent        3: reserve, batch, release (2n+1 for n intents)
//	Commit not applied      +1 (a read of the commit record, which tells a
//	                        refused batch from one applied and resent) +1
//	                        per intent (the reserved message deleted)
//	worker, per intent      the handler's own, +1 message delete,
//	                        +1 commit record removal (Commit's intents),
//	                        +1 blob read and +1 blob delete (claim checks),
//	                        and a share of a dequeue (1 per up to 32)
//	worker, after a crash   +1 commit record read for a message that was
//	                        never released (+1 aborted record insert when
//	                        the record is missing)
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
//	                                                             aborted record, message dropped
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
//	handler done, before the record     effects, record, message    runs it again, then finishes
//	  removal
//	record removed, before the message  effects, message            released: runs it again;
//	  delete                                                        not released: no record, so
//	                                                                aborted record and dropped
//	poison queued, before the delete    message in both queues      poisons it again (a duplicate
//	                                                                in the poison queue)
//
// Lost responses are handled at each write: a reserve whose response is
// lost is retried, and the duplicate message is ruled out or run (both
// harmless); the batch's outcome is settled by the core's verification
// (patterns/table); a release whose response is lost leaves a visible
// message, or one visible when the window ends; a message delete or record
// removal that finds nothing after a lost response is success.
//
// # Scaling out
//
// Run several workers on one queue, in one process or many machines
// (competing consumers): each message is leased by one worker at a time.
// For more throughput than one queue gives (2,000 messages/s per queue on
// Azure), use several queues, one Queue and Worker per queue.
package eventual
