package buckets

import (
	"reflect"
	"unsafe"

	"github.com/tablekit/tablekit/patterns/table"
)

// errOp returns an op that carries err (its Err), which table.Submit
// reports before sending anything.
//
// Stopgap: the table package builds ops with an error only for errors of
// its own, and offers no constructor for another package's; until it does
// (a table.ErrOp(err) Op), the error is set through reflection. The tests
// check that Op.Err returns it.
func errOp(err error) table.Op {
	var op table.Op
	f := reflect.ValueOf(&op).Elem().FieldByName("err")
	reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Set(reflect.ValueOf(&err).Elem())
	return op
}
