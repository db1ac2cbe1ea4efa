// Package reserved is the explicit path by which tablekit's pattern
// packages write and read their own rows under table.ReservedPrefix (commit
// records, index entities). Package table refuses such keys from every
// other caller (table.ErrInvalidKey, nothing sent), so an application id
// read from user input can never take over, overwrite or read a reserved
// row; being internal, this package can be imported only by tablekit's own
// packages.
package reserved

// view returns a copy of a *table.Table[T] (given and returned as any)
// that may use reserved keys. Package table sets it when it is initialised.
var view func(any) any

// Register is called once by package table's init with the function
// behind Table.
func Register(f func(any) any) { view = f }

// Table returns a view of t, a *table.Table[T], whose writes, reads and
// ops may use keys under table.ReservedPrefix. Pattern packages keep such
// a view for their reserved rows only, never for the application's
// entities.
func Table[P any](t P) P { return view(t).(P) }
