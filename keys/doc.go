// Package keys builds PartitionKey and RowKey values that are valid, sort
// correctly and can be parsed back: the foundation of every pattern in the
// Azure Table design guide. It uses only the standard library and does no
// I/O; all functions are pure and safe for concurrent use.
//
// Tables have one index: PartitionKey, then RowKey, in ordinal string order.
// Every lookup the guide describes is a point or range query over keys, so
// keys must (1) be accepted by the service, (2) sort the way the application
// needs, and (3) decode back into the values they were built from. The
// encodings here are modelled on FoundationDB's tuple layer.
//
// # Validity
//
// The service rejects '/', '\', '#', '?', the control characters
// U+0000-U+001F and U+007F-U+009F, and keys over 1,024 characters
// (MaxKeyLength UTF-16 code units; Azurite: 512). Validate checks exactly that, and every error of
// this package satisfies errors.Is(err, ErrInvalidKey).
//
// # Escape: arbitrary text in a key
//
// Escape maps any string (emails, names, tenant ids, even invalid UTF-8) to a
// valid key, reversibly (Unescape) and preserving order. A changed character
// becomes an escape character and its two hex digits: "a/b" -> "a.2Fb".
// Order preservation forces the choice of escape characters: an escaped
// forbidden character must still sort between its unforbidden neighbours, so
// for each run of forbidden characters, one neighbour must itself become an
// escape character. For the control characters the only neighbour is the
// space, so spaces are always escaped; for '/' it is '.' (or '0', which would
// ruin zero-padded numbers). The escape characters are ' ', '!', '"', '.',
// '>', ']' and U+00A0; a valid key that contains none of them is returned
// unchanged, so ordinary identifiers stay readable.
//
// # Join: compound keys
//
// Join builds the guide's compound keys (empid_000123, 000123_2012,
// BIB:01234__John__M__55) as escaped parts separated by '!':
// Join("empid", "000123") == "empid!000123". '!' never occurs inside an
// escaped part and sorts below every character that does, so Join preserves
// tuple order (element by element, a proper prefix first), Split parses it
// unambiguously, and PrefixRange gives the exact RowKey range of every key
// with a given prefix, for `RowKey ge lo and RowKey lt hi`.
//
// # Byte order and service order
//
// Go compares strings by bytes (code point order); the service and Azurite
// compare UTF-16 code units. These agree everywhere except that characters
// U+E000-U+FFFF sort before the supplementary planes (U+10000 and up) in byte
// order and after them in UTF-16 order. No encoding can make one string sort
// the same in both orders when the raw characters disagree, so Escape and
// Join leave those characters as they are and guarantee order preservation
// under each order separately: whichever order you compare in, encoded keys
// compare as their inputs do in that same order. When client code sorts or
// merges keys to match query results, it must use Compare, which implements
// the service's order. Order is not promised for invalid UTF-8 input (round
// trips are).
//
// # Numbers and time
//
// Pad writes fixed-width zero-padded numbers (Pad(123, 8) == "00000123"), so
// string order is numeric order; Int64 does the same for every int64,
// negatives included. Ticks and InvertedTicks reproduce .NET's DateTime.Ticks
// and the guide's log-tail key,
// string.Format("{0:D19}", DateTime.MaxValue.Ticks - DateTime.UtcNow.Ticks),
// so that keys written by .NET and Go applications interleave correctly. Pad,
// Ticks and InvertedTicks panic on values they cannot encode (a number wider
// than the width, a time outside 0001-9999): those are programming errors,
// and a wrong key would silently corrupt the order of stored data.
//
// # Hot partitions
//
// Bucket hashes a key into one of n fixed-width buckets with a hash that will
// never change, to spread an append-only workload (the guide's
// prepend/append anti-pattern) over n partitions.
package keys
