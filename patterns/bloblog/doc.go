// Package bloblog is the design guide's log data pattern (pattern 13):
// log entries queried by time range are stored, as Storage Analytics
// stores its logs, in append blobs named by the hour they cover, written
// in buffered batches, and read back for a time range by listing only
// that range's hours.
//
// # When to use it
//
// For high-volume logs read by time: request logs, audit trails, metrics
// exported for analysis. In a table they fit badly: a PartitionKey of the
// time sends every write to one hot partition, any other key makes a
// time-range query a scan, and each entry is a billed transaction. Here an
// entry costs a share of an append of up to 4 MiB. Not for looking entries
// up by anything but time (use a table with the keys you query), not for
// the newest entries of one subject (patterns/logtail), and not where an
// entry must be durable the moment the call returns (see Buffering).
//
// # Blobs
//
// An entry appended at t (UTC) goes to a blob named
//
//	<Prefix>/YYYY/MM/DD/HH00/<writer ID>-<sequence>.log
//
// for the hour starting at HH:00 of t's day, e.g.
// logs/web/2014/07/31/1800/web1-000001.log, as Storage Analytics names
// queue/2014/07/31/1800/000001.log. Without a Prefix (a nil *Options
// means defaults) the names start at the container's root:
// 2014/07/31/1800/web1-000001.log. A [Log] takes its container as New's
// positional argument; it writes no table rows, so its reads yield an
// [Entry] of its own (time, value, blob), not a table.Entity. Each writer has its own sequence
// space: its blobs carry its ID, and it numbers them from 000001 each
// hour, moving to the next number before a blob reaches the log's
// Options.MaxBlobSize (64 MiB by default; a writer's
// WriterOptions.MaxBlobSize may be lower) or MaxBlocks appends (the
// service's limits are 50,000 appends of at most 4 MiB, about 195 GiB). A writer creates
// each blob only if absent, with a nonce of its own in the blob's
// metadata, and appends only to blobs it created, conditioned on the
// blob's length (AppendPosition); so several writers on one prefix, even
// with the same ID, never interleave inside a blob.
//
// A blob is lines of entries: the entry's time (UTC, fixed width, to the
// nanosecond), a space, the entry as JSON (encoding/json; a Log[[]byte]
// stores the bytes as they are, without line breaks), a line break. Its
// metadata records the writer, its nonce, the time of its first entry
// (set when it is created) and of its last (set when the writer moves to
// another blob, when an hour ends, or on Close). Entry times come from
// the writer's clock (WriterOptions.Now) and never go back within a
// writer: an entry appended when the clock reads earlier than the
// writer's previous entry gets that entry's time.
//
// # Buffering
//
// Append only buffers the entry. A flush writes everything buffered, one
// append per up to 4 MiB of each hour: when WriterOptions.FlushSize bytes
// are buffered (default 1 MiB), every FlushInterval (default 1 s), on
// Flush and on Close. That is the trade-off the guide names, reliability
// against cost: a process that dies loses the entries still buffered, at
// most about FlushInterval of them (or MaxBuffered bytes while storage is
// slow); shorter intervals lose less and cost more appends. Call Flush
// where an entry must be stored before going on. Close flushes everything
// and records the last entry time; when it returns nil, every entry that
// Append accepted is stored. When storage fails, entries stay buffered
// (Append waits once MaxBuffered bytes are, until its context ends) and a
// later flush, or Close again, stores them.
//
// # Guarantee
//
// Every entry Append accepted is stored exactly once, unless the writer
// dies first: an append applies whole or not at all, and each is
// conditioned on the position where the writer expects the blob to end,
// so a resend after a lost response cannot apply twice (it answers 412
// AppendPositionConditionNotMet). After an append whose outcome is
// uncertain (a lost response, a 500, a transport error) the writer reads
// the blob's length, and the bytes at the position when needed, and
// knows: stored (go on), not stored (append again, under the same
// condition), stored up to a line (append the rest), or another writer's
// bytes (move to a new blob). A flush that ends before it knows (its
// context ended in flight) keeps its entries, and the writer keeps its
// idea of where the blob ends: the next flush appends them there, is
// refused if they were stored after all (412), and skips what it finds.
// A create
// whose response was lost answers 409 on the resend; the nonce in the
// existing blob's metadata tells the writer's own blob from another's.
// A flush writes its entries in order; one that fails keeps the entries
// it did not write, in order, ahead of newer ones.
//
// Range reads each blob as it is when read: entries appended since may
// or may not appear, and a read never sees part of an append.
//
// # Reading
//
// Range(from, to) lists the blobs of each hour of the range (one
// request per hour, per 5,000 blobs), skips those whose metadata puts
// all their entries outside it (first entry at or after to, or last
// entry before from), and merges the others' entries in time order (ties
// by blob, ordered by first entry then name, then by line, so a writer's
// entries come in the order it appended them). A blob is read (whole) only
// when the merge reaches its first entry, Options.Concurrency blobs at a
// time ahead of the loop; memory holds the blobs overlapping the merge's
// current time (about one per writer) and the read-ahead, each at most
// Options.MaxBlobSize. A line that is not an entry is ErrCorrupt; a blob
// larger than Options.MaxBlobSize, or a line longer than one append, is
// ErrTooLarge (see Trust).
//
// # Trust
//
// The log trusts whoever can write to its container: a blob under Prefix
// is read as the log's. Such a writer (with blob write access, or a SAS
// for the container) can add, change or delete entries, and can make
// Range fail on a blob it plants. What it cannot do: make Range hold more
// than Options.MaxBlobSize of a blob (the listing's size is checked before
// a blob is downloaded, its Content-Length before its body is read, and
// the read stops past the limit), or make Range return a line that is not
// in the entry format. Errors of the blob service are redacted
// (internal/redact): a SAS in the container client's URL never appears in
// an error. A table SAS gives no access to the log.
//
// # Cost in round trips
//
//	Append                 0 (buffered)
//	flush                  1 append per up to 4 MiB of one hour's entries;
//	                       +1 to create a blob (a new hour, or a full blob),
//	                       +1 to record a finished blob's last entry time;
//	                       +1 or 2 reads to settle an uncertain append,
//	                       +1 to settle a create answered 409
//	Close                  a flush, +1 to record the last entry time
//	Range over h hours     h listings (1 per 5,000 blobs each) + 1 read per
//	                       blob that may hold entries of the range
//
// # Crash points
//
// A writer that stops (the process dies) at each point of a flush:
//
//	stopped                                stored                        lost
//	entries buffered, not flushed          what earlier flushes wrote    the buffered entries
//	after a create, before its append      an empty blob with its first  the buffered entries
//	                                       entry time (read as empty)
//	an append sent, its answer lost        the block, or not             the buffered entries, the
//	                                                                     block's too if not stored
//	after an append, before the last       a blob without its last       nothing more: the blob is
//	  entry time is recorded               entry time                    read for every range of its
//	                                                                     hour from its first entry on
//
// A new writer never appends to a blob of a stopped one: it creates its
// own (its nonce differs), after the stopped one's numbers if it has the
// same ID.
//
// # Cosmos DB
//
// Not a table pattern: the logs are append blobs of a Storage account, so
// the Cosmos DB Table API changes nothing here (an application whose
// tables are on Cosmos DB keeps its blob logs in a Storage account).
package bloblog
