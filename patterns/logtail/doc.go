// Package logtail is the design guide's log tail pattern (pattern 7):
// entries appended to a partition under RowKeys that sort newest first, so
// that the n most recent are one range query with $top=n instead of a scan
// of the partition.
//
// # When to use it
//
// For the recent end of an append-only log per subject: a user's logins, an
// order's status changes, a device's readings, read newest first. Not for
// queries by other properties (see the secondary index patterns), and not
// for bulk time-range analytics over everything (blob logs, pattern 13,
// fit that better).
//
// # Keys
//
// New takes the [table.Table] of T whose rows are the log's entries, one
// row each; the Log computes every entry's keys (T's key fields, if any,
// are ignored on writes and receive the stored keys on reads). The
// PartitionKey is the log's name, escaped ([keys.Join]: any name that fits
// is a log); with Buckets, the name joined with a bucket number in three
// digits ("web!003"). That is tablekit's one bucket scheme, so a
// [buckets.Spread] of Buckets buckets over the same table reads a log as
// the logical partition of its name (its Partitions are the log's, and
// its Range yields the entries newest first). The RowKey is the guide's inverted ticks,
// DateTime.MaxValue.Ticks - t.Ticks in 19 digits ([keys.InvertedTicks]),
// then the appending Log's sequence number inverted (so later appends of
// one 100 ns tick sort first) and a random writer id (so appends of
// different processes in the same tick never collide). The entry's time is
// recovered from the key.
//
// With Options.Prefix a log shares a partition with other rows: the log
// named "Sales" is partition "Sales" itself (not escaped), and its
// entries' RowKeys are the Prefix, '!', then the key above
// ("log!2516...-...-..."). So a log of every change to a department's
// employees lives beside them, and [Log.AppendOp] writes an entry in one
// transaction with the change it records ([table.Change], see "Composing
// patterns" in package table): the entry exists if and only if the change
// does. The log's reads select the Prefix's keys only, and other patterns
// select their own, so no row is read as the other's.
//
// Reads return an [Entry]: the [table.Entity] (the keys the entry is
// stored under and the ETag read, which address the row in the table
// package) and its time. Append returns the keys and the time of the
// entry it wrote ([Appended]).
//
// # Consistency
//
// Each append is one insert: atomic, and settled exactly when its response
// is lost (patterns/table's write outcomes: an append is never written
// twice and never reported failed when it was stored). Reads are
// strongly consistent per partition. Entries of one 100 ns tick from one
// Log are newest first; entries of one tick from different Logs
// (processes) come in no particular order.
//
// # Cost in round trips
//
//	Append, AppendAt      1 (+1 read to settle a lost response)
//	AppendOp              0 (an op: it joins a transaction, adding 1
//	                      operation to it)
//	Latest(n), n <= 1000  1 per bucket, in parallel (more only if the
//	                      service returns a short page); on Cosmos DB 1
//	                      per bucket per window step (see below)
//	Range                 1 per page (PageSize) per bucket, merged lazily
//	RangePage             1 per bucket, in parallel (as Latest), for a
//	                      page of PageSize (default 1,000), resumable from
//	                      its cursor in any process
//	Trim                  per bucket: 1 query per 1,000 entries + 1
//	                      transaction per 100; idempotent (entries already
//	                      gone are skipped)
//
// # Cosmos DB
//
// Supported, at another cost. The Cosmos DB Table API returns a query's
// entries in no key order, and its $top returns any n matches, not the
// newest (the design guide calls the log tail pattern unsuitable there).
// Under the table's Cosmos [table.Profile] (Sorted false), Latest reads a
// window of time instead of the first n keys: the entries of the last
// second (and any with later times, from clocks ahead), then windows grown
// with the rate it finds (32 times longer when one was empty) until they
// hold n; it sorts what it read and keeps the n newest. Each step reads
// only keys the previous ones did not; the cost is the entries of the
// window that holds the n-th newest, up to a few times n, in transfer and
// memory, and one query per bucket per step (about 8 steps when the n-th
// newest entry is years old). Range reads each bucket's entries of
// [from, to) whole and sorts them before yielding the first (memory and
// transfer O(range) before the first entry, not one page). Trim deletes
// any 1,000 old entries per round, which needs no order: unchanged.
// Appends are the same on both services.
//
// # Trust
//
// A log is its partitions (its escaped name, and the bucket numbers):
// reads query those only, and each row's RowKey must start with the
// inverted ticks of an entry (an error otherwise, ending the read, never
// an entry with a made-up time). A writer with a SAS scoped to other
// partitions cannot read, add to or trim the log; one scoped to its
// partitions can add, change or delete entries, or make its reads fail. A
// log name that makes no valid PartitionKey (empty, or too long once
// escaped) or starts with "~tk~" is ErrInvalid and
// [table.ErrInvalidKey], before the network, also for reads. Every error
// found before the network matches ErrInvalid and [table.ErrInvalid].
//
// RangePage's cursors may reach end users. Plain (the default), a cursor
// is "k1.", a fingerprint of the log and range, and the base64 of the
// RowKey of the page's last entry, whose inverted ticks are its time.
// Altered, it resumes the same range elsewhere (within the range, else
// ErrInvalid). With a CursorKey on the log's table ([table.Options]
// CursorKey) a cursor is sealed: it shows nothing, and
// any altered character, or a cursor of another log, range or table, is
// ErrInvalid before the network. An error quotes at most a cursor's first
// 16 bytes.
//
// # Hot logs
//
// One partition serves about 2,000 entities per second. A log written
// faster can be spread over Options.Buckets partitions (named as
// patterns/buckets names them): appends go to the buckets in turn (each
// Log's appends spread evenly); Latest reads all buckets in parallel and
// merges by time, so it costs one round trip per bucket instead of one;
// Range merges the buckets lazily, fetching each bucket's pages as the
// merge needs them. Keep Buckets fixed for a log: entries in buckets no
// longer read are hidden, not lost.
//
// # Retention
//
// Trim deletes entries older than a time with batches of deletes. When a
// whole period of logs expires at once, a table per period, deleted whole,
// costs one request however many entries it holds (the guide's high-volume
// delete pattern).
package logtail
