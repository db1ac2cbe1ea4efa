package tabletest_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

// Examples and programs get their account from ConnectionString: the
// emulator, started on first use and shared by the process, or the account
// in AZURE_STORAGE_CONNECTION_STRING.
func ExampleConnectionString() {
	cs, err := tabletest.ConnectionString()
	if err != nil {
		log.Fatal(err)
	}
	svc, err := aztables.NewServiceClientFromConnectionString(cs, nil)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	name := fmt.Sprintf("example%d", time.Now().UnixNano())
	if _, err := svc.CreateTable(ctx, name, nil); err != nil {
		log.Fatal(err)
	}
	defer svc.DeleteTable(ctx, name, nil)
	fmt.Println("created a table")
	// Output: created a table
}
