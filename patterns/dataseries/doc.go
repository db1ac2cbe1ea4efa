// Package dataseries is the design guide's data series pattern (pattern
// 9): a whole series (the guide's 24 hourly message counts, or any fixed
// set of named slots) stored as the properties of one entity, so that one
// point query reads the whole series and one merge updates one slot.
//
// # When to use it
//
// For small, fixed series read together: counters per hour of a day, per
// day of a week, per category. Not for series longer than one entity holds
// (251 slots, an entity's properties less one: a longer series needs
// several entities, the wide entity pattern), and not for append-only time
// series (see patterns/logtail).
//
// # Using it
//
// [New] takes a [table.Table] of [table.Dynamic] (the series' rows are of
// the package's own making: one property per slot) and the slot names, both
// required, and optional [Options] (nil: defaults); the slots' type is its
// explicit type parameter:
//
//	counts, err := dataseries.New[int64](tbl, dataseries.Hours(), nil)
//
// [Series.Get] returns the series as a [table.Entity] whose Value maps
// every slot to its value: the keys, the ETag and the slots, the core's
// read envelope. [Series.Set] and [Series.SetAll] return the core's
// [table.Result]; [Series.Delete] removes the whole series (its one
// entity), conditioned on the ETag of a Get.
//
// # Composing writes
//
// A series is one entity, so each of its writes can join a transaction of
// other patterns' writes in its partition (see "Composing patterns" in
// package table): SetOps, SetAllOps, AddOps and DeleteOps return the write
// as a [table.Change] for a Table's Apply (or eventual's Queue.Apply),
// which sends it with the others all or none. The guide's message counts,
// say: a message's insert and its hour's Add in one transaction, so the
// count never misses or doubles a message:
//
//	add, err := counts.AddOps(ctx, "user42", "2024-07-31", "H18", 1) // reads the series
//	msg := table.Change{By: "messages", Ops: []table.Op{messages.InsertOp(m)}}
//	_, err = messages.Apply(ctx, msg, add)
//
// SetOps, SetAllOps and DeleteOps send nothing; AddOps reads the series
// and conditions its merge on the ETag read (its insert, for a series
// never written), so a write of the series before the Apply fails the
// transaction with ErrPreconditionFailed (ErrAlreadyExists when another
// writer created it) and nothing of it applies: make the change again.
//
// # Consistency
//
// Each slot is a property of one entity, so every operation is strongly
// consistent. Set merges one property: concurrent Sets of different slots
// never overwrite each other, concurrent Sets of one slot are last writer
// wins. Add is a read-modify-write conditioned on the ETag read
// (table.Modify): concurrent Adds to the same or different slots lose no
// update, and a lost response is settled by reading the entity's write
// history, so an Add is never applied twice (ErrOutcomeUnknown when it
// cannot be settled). Delete removes the series if its ETag still
// matches (or whatever is stored, with azcore.ETagAny); a Get then reads
// it as never written. SetAll replaces the whole series, conditioned on
// the ETag of a Get, or unconditionally with azcore.ETagAny (the only way
// to write a series that has no ETag yet); an empty ETag is refused
// ([table.ErrNoETag]).
//
// # Cost in round trips
//
//	Get       1 (a point query with the slots projected)
//	Set       1 (an insert-or-merge of one property)
//	SetAll    1
//	Add       2 (read + conditional merge), +2 per conflict; +2 the
//	          first time (the series is created empty)
//	Delete    1
//	AddOps    1 (a read); SetOps, SetAllOps, DeleteOps 0: the change
//	          travels in its Apply's one transaction
//
// # Cosmos DB
//
// Supported, unchanged: every operation is a point read or a merge of one
// entity (sent as the POST with X-HTTP-Method: MERGE that Cosmos DB wants,
// by the SDK), so result order does not matter, and a series' 251 slots
// fit an entity of both services (the table's [table.Profile]).
//
// # Trust
//
// A series is one entity, read by a point query of its slots only; each
// stored slot must be a number the series' type holds (an error
// otherwise, never a value). A writer with a SAS scoped to other
// partitions cannot read or change it; one scoped to its partition can
// set any slot to any value, as it can any entity there. Invalid keys are
// ErrInvalid and [table.ErrInvalidKey], nothing sent; every error found
// before the network matches ErrInvalid and [table.ErrInvalid].
//
// # Types
//
// Slots hold int64 (Edm.Int64) or float64 (Edm.Double) values, chosen by
// the type parameter. The service returns a whole-number double without its
// type annotation, so reads accept any stored number and convert it.
package dataseries
