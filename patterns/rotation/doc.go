// Package rotation is the design guide's high-volume delete pattern
// (pattern 8): entities that are deleted together (a day of login records)
// go to a table of their own, one table per period, and deleting the
// period deletes the table: one request, however many entities it holds,
// instead of a query and a delete per entity.
//
// # When to use it
//
// For data kept for a fixed time and then dropped in bulk: logs, login
// attempts, telemetry, events, each entity belonging to the period of its
// time. Not when entities are deleted one by one or by other criteria
// (a table's Submit of deletes, or patterns/logtail's Trim, fit that), not when
// most reads need one entity without knowing its time (every period would
// have to be searched), and not for a handful of entities per period (a
// table each is then more to manage than the deletes it saves). Reads that
// span periods cost a query per period.
//
// # Names and discovery
//
// The table of the period containing t is prefix + the period's start in
// UTC, formatted by Period.Layout: "logins20240731" for Day,
// "logins2024073118" for Hour, "logins202407" for Month. The digits are
// fixed width, so name order is time order. Periods are discovered by
// listing the tables whose names start with the prefix (Periods): the
// account's table list is the only registry, so it cannot drift from the
// tables. The prefix ends in a letter, so no other rotation's tables (nor
// other tables whose names do not end in exactly the period's digits) are
// taken for this one's; do not create tables named prefix + digits
// yourself.
//
// New takes the account's service client (New(svc, prefix, nil) is a
// rotation by day), not a [table.Table]: the rotation creates, lists and
// deletes its tables. Each period's table holds T's entities, one row
// each, keyed by T's key fields or WithKeys; Table(at) returns it as a
// [table.Table] of T. Insert takes the value and the time that selects
// its period.
//
// # Unique names
//
// A deleted table's name cannot be used again for 40 seconds or more (409
// TableBeingDeleted), and a table created again would resurrect a period
// its owner meant to drop. So a name is used for one period, once:
//
//   - A period is open for writes until Options.Grace (default an hour)
//     after it ends, for late arrivals. Writes to a closed period fail with
//     ErrExpired before the network, and the table of a closed period is
//     never created.
//   - Sweep deletes only periods closed for MaxClockSkew (5 minutes) more:
//     its SweepOptions.Before (required: a rotation keeps no retention of
//     its own, so Sweep has no default that deletes data) must be at
//     least Grace + MaxClockSkew in the past.
//   - A write whose table is missing checks the clock again before it
//     creates the table, so a period swept while the write was on its way
//     is not created again. A table being deleted (409 TableBeingDeleted,
//     which the real service answers for 40 s or more after a delete; the
//     emulator never does) is not waited for, as table.CreateTable would:
//     the write fails with ErrExpired.
//
// This holds while the clocks of the hosts that write and sweep agree
// within MaxClockSkew and a write reaches the service within MaxClockSkew
// of its check (the retry policy's delays, about 11 s in all with
// retry.Default, stay far below).
//
// # Consistency
//
// Each entity lives in exactly one table, its period's, and every write is
// a table.Table write with its three outcomes (applied, not applied,
// unknown: a lost response is settled by a read, never written twice). The
// first write of a period creates the table; concurrent first writers all
// succeed (a create that finds the table is not an error). A new table may
// be throttled while the service learns its load (503 Server Busy): the
// retry policy (retry.Default) absorbs it; Prepare creates a period's table
// ahead of its traffic. Range reads each period with the service's
// consistency; periods are read concurrently, not as one snapshot. A Sweep
// racing writes to the periods it deletes only ever meets closed periods;
// a write to a period deleted under it fails (ErrExpired, or
// table.ErrTableNotFound when its outcome was already unknown) and an
// entity written just before the delete goes with its period.
//
// # Cost in round trips
//
//	Insert              1; 3 for the first write of a period (the insert
//	                    answers TableNotFound, create, insert again);
//	                    +1 read to settle a lost response
//	Submit              1 create (TableAlreadyExists when the table exists)
//	                    + 1 per transaction ([table.Table.Submit])
//	Prepare             1
//	Name, Table         0
//	Periods             1 per 1,000 tables of the prefix (a list request)
//	Range               Periods + 1 per page per period overlapping the
//	                    range, Concurrency at a time
//	RangePage           Periods + 1 per period overlapping the range, for
//	                    a page of PageSize (default 1,000), resumable
//	                    from its cursor in any process
//	Sweep(Before)       Periods + 1 delete per period swept, whatever its
//	                    size: 100,000 entities go in 1 request instead of
//	                    100 queries and 1,000 transactions (BENCHMARKS.md);
//	                    +1 query for a delete whose responses were all lost
//
// # Crash table
//
// A process may stop at any point; none leaves a wrong state behind:
//
//	Insert, first write of a period:
//	  after the insert answered TableNotFound      nothing written
//	  after the create                             an empty table for the
//	                                               period (used by the next
//	                                               write, swept with it)
//	  during the second insert                     table.Insert's outcome:
//	                                               stored once or not at all
//	Submit:
//	  after the create                             an empty period table
//	  between transactions                         the transactions sent are
//	                                               applied, the rest are not
//	                                               (Submit's results)
//	Sweep:
//	  after the list                               nothing deleted
//	  between deletes                              the older periods deleted;
//	                                               the next Sweep deletes the
//	                                               rest (Sweep is idempotent)
//	  with a delete in flight                      the table deleted or not;
//	                                               the next Sweep lists it
//	                                               again or reports it gone
//	  a delete's responses lost                    settled in the same Sweep:
//	                                               a resend's 404, or one
//	                                               query of the table
//	                                               (table.DeleteTable), finds
//	                                               it gone (Swept.Gone); still
//	                                               there, Sweep stops with
//	                                               ErrOutcomeUnknown and the
//	                                               next Sweep lists it again
//
// The tests stop the process (cancel the context) at each of these points.
//
// # Trust
//
// A period's table is taken from the account's table list only if its
// name is one this rotation makes (the prefix, then exactly the period's
// digits, parsing back to a period start); its entities are read through
// the table package as T. Creating, listing and deleting tables needs an
// account-level SAS or key: a writer with a SAS scoped to partitions of a
// period's table can add, change or delete entities there only, which
// Range then yields with the others; it cannot create or delete periods.
// Errors of the SDK's table creation are redacted (no SAS signature), as
// the table package's are; invalid keys are ErrInvalid and
// [table.ErrInvalidKey], nothing sent (Submit sends no create for an op
// that carries an error). Every error found before the network matches
// ErrInvalid and [table.ErrInvalid].
//
// RangePage's cursors may reach end users. Plain (the default), a cursor
// is "k1.", a fingerprint of the range, Filter and Select, and the base64
// of the PartitionKey and RowKey of the page's last entity. Altered, it
// resumes the same range and query elsewhere. With Options.CursorKey a cursor is
// sealed: it shows nothing, and any altered character, or a cursor of
// another range, query or rotation, is ErrInvalid before the network; the
// periods' tables (Table) seal their query cursors with it too. An error
// quotes at most a cursor's first 16 bytes.
//
// # Reading across periods
//
// Range(from, to, opts) queries every period that overlaps [from, to)
// with opts' Filter and Select, concurrently (a merge of the periods' queries), and merges the results in the
// service's key order, so that the rotation reads like one table. It
// yields each entity as a [table.Entity]: its keys and the ETag read,
// which address it in its period's table (Table(at): Update, Delete). Periods
// are selected whole: to narrow within them, put the time in the keys (as
// the guide's logins do, RowKey = inverted ticks or ticks) and in the
// Filter. To read one period, use Table(at).
//
// # Cosmos DB
//
// Works, with costs that change the design's meaning. On the Cosmos DB
// Table API each table is a container with its own provisioned throughput
// (billed while it exists, even empty), creating tables is throttled, and
// an account holds at most a few hundred: a table per period suits long
// periods there (weeks, months), not hours. Its listings and queries come
// in no order: Periods sorts the listing ([table.ListTables] reads it
// whole, which the account's few hundred tables keep small), and Range
// reads each period's query whole and sorts it before the merge (memory
// and transfer O(range) before the first entity; the same round trips).
// Sweep deletes a table per period as on Table Storage.
package rotation
