// Package reserved is the explicit path by which tablekit's pattern
// packages write their own rows and properties: rows under
// Prefix (commit records, index entities) and properties
// under PropertyPrefix (a copy's reference, a wide entity's
// version, a blob pointer). Package table refuses both from every other
// caller (table.ErrInvalidKey, table.ErrInvalidEntity; nothing sent), so an
// application id or property read from user input can never take over,
// overwrite or read a pattern's row or forge its bookkeeping. Being
// internal, this package can be imported only by tablekit's own packages.
package reserved

// Prefix starts the RowKey of the rows tablekit's patterns keep
// beside an application's entities in its partitions (the commit records
// of patterns/eventual, for instance). Queries skip these rows unless
// table.Query.IncludeReserved is set, so they never decode into an
// application's T; the skipped rows still count toward the service's page
// of at most PageSize entities, so a page may be short. Writes, point reads
// and ops of keys (PartitionKey or RowKey) that start with it are refused
// with table.ErrInvalidKey, nothing sent: only the pattern packages write such
// rows (see the package documentation, "Reserved keys").
const Prefix = "~tk~"

// PropertyPrefix starts the names of the properties tablekit
// keeps beside an entity's own (WriteProperty, secondaryindex's copy
// reference, wideentity's version and parts, largeentity's blob pointers).
// Every write of an application's Table refuses them (table.ErrInvalidEntity,
// nothing sent): a Dynamic's property of such a name, and any write of a
// struct type with a field stored under one (such a type can read a
// pattern's rows, as an operator's tool may). Only the pattern packages
// write them, through their own views.
const PropertyPrefix = "Tk"

// WriteProperty is the property in which tablekit records the identities
// of the last writes of an entity (at most HistoryLength of them, newest
// first), so that a write whose response was lost can be verified by
// reading. Inserts and conditional updates (an ETag other than
// azcore.ETagAny) write it, single or in Submit; upserts and unconditional
// updates leave it alone (a merge keeps it, a replace removes it). It costs
// one property and at most about 230 bytes of the entity's 1 MiB; an entity
// that already has 252 properties, or would pass 1 MiB with it, is written
// without it and its lost responses are reported as table.ErrOutcomeUnknown.
//
// It is reserved: a struct field or Dynamic property of this name is
// rejected, it is never decoded into T, and other code must not write it.
const WriteProperty = "TkWrites"

// HistoryLength is how many write identities WriteProperty keeps. A lost
// response is settled exactly as long as fewer than HistoryLength other
// writes reached the entity between the lost attempt and the verifying
// read; past that it is table.ErrOutcomeUnknown. An inserted entity carries one
// identity (about 60 bytes); each conditional update adds one (12 bytes),
// up to about 230 bytes.
const HistoryLength = 8

// view returns a copy of a *table.Table[T] (given and returned as any)
// that may write reserved properties and, with keys, use reserved keys.
// Package table sets it when it is initialised.
var view func(t any, keys bool) any

// Register is called once by package table's init with the function
// behind Table and Properties.
func Register(f func(t any, keys bool) any) { view = f }

// Table returns a view of t, a *table.Table[T], whose writes, reads and
// ops may use keys under Prefix and Dynamic properties under
// PropertyPrefix. Pattern packages keep such a view for
// their reserved rows only, never for the application's entities.
func Table[P any](t P) P { return view(t, true).(P) }

// Properties returns a view of t, a *table.Table[T], whose writes may
// carry Dynamic properties under PropertyPrefix, while keys
// under Prefix stay refused: for the tables in which a
// pattern writes the application's entities with its own bookkeeping
// properties beside them.
func Properties[P any](t P) P { return view(t, false).(P) }
