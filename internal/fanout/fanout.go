// Package fanout carries package table's merge of queries over several
// tables (a rotation's periods, the partitions of buckets and logtail) to
// internal/keycursor, which gives it types: table cannot export it without
// exporting what only tablekit's packages use, and a generic function
// cannot be registered as a value, so table registers, per table, a
// closure of the table's entity type.
package fanout

var of func(t any) any

// Register is called once by package table's init.
func Register(f func(t any) any) { of = f }

// Of returns, for t, a *table.Table[T], its merge function:
// func(context.Context, []*table.Table[T], []*table.Query, *table.FanOutOptions) iter.Seq2[table.Entity[T], error].
func Of(t any) any { return of(t) }
