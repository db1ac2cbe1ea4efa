package table_test

import (
	"reflect"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/patterns/table"
)

// newEnvClient returns a client for a table that is never created: for
// tests that must fail before the network.
func newEnvClient(t *testing.T) *aztables.Client {
	t.Helper()
	c, err := aztables.NewClientWithNoCredential("http://127.0.0.1:1/devstoreaccount1/never", nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newErr[T any](c *aztables.Client) error {
	_, err := table.New[T](c, nil)
	return err
}

// newWide analyses a struct type made at run time.
func newWide(fields []reflect.StructField) error {
	return table.CheckType(reflect.StructOf(fields))
}
