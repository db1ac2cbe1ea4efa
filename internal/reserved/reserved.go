// Package reserved is the explicit path by which tablekit's pattern
// packages write their own rows and properties: rows under
// table.ReservedPrefix (commit records, index entities) and properties
// under table.ReservedPropertyPrefix (a copy's reference, a wide entity's
// version, a blob pointer). Package table refuses both from every other
// caller (table.ErrInvalidKey, table.ErrInvalidEntity; nothing sent), so an
// application id or property read from user input can never take over,
// overwrite or read a pattern's row or forge its bookkeeping. Being
// internal, this package can be imported only by tablekit's own packages.
package reserved

// view returns a copy of a *table.Table[T] (given and returned as any)
// that may write reserved properties and, with keys, use reserved keys.
// Package table sets it when it is initialised.
var view func(t any, keys bool) any

// Register is called once by package table's init with the function
// behind Table and Properties.
func Register(f func(t any, keys bool) any) { view = f }

// Table returns a view of t, a *table.Table[T], whose writes, reads and
// ops may use keys under table.ReservedPrefix and Dynamic properties under
// table.ReservedPropertyPrefix. Pattern packages keep such a view for
// their reserved rows only, never for the application's entities.
func Table[P any](t P) P { return view(t, true).(P) }

// Properties returns a view of t, a *table.Table[T], whose writes may
// carry Dynamic properties under table.ReservedPropertyPrefix, while keys
// under table.ReservedPrefix stay refused: for the tables in which a
// pattern writes the application's entities with its own bookkeeping
// properties beside them.
func Properties[P any](t P) P { return view(t, false).(P) }
