package largeentity_test

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/tablekit/tablekit/patterns/largeentity"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
	"github.com/tablekit/tablekit/retry"
)

// The guide's example: an employee's photo, too large for the entity,
// kept in a blob that the entity points at. Insert uploads the photo,
// then writes the entity; Get reads the entity, then the photo, and checks
// its SHA-256; a projection without the photo reads the entity only.
func Example() {
	ctx := context.Background()
	c, cleanup, err := tabletest.ScratchTable(ctx, "staff")
	if err != nil {
		log.Fatal(err)
	}
	defer cleanup()
	// A container for the photos, in the same account.
	cs, err := tabletest.ConnectionString()
	if err != nil {
		log.Fatal(err)
	}
	bo := &azblob.ClientOptions{}
	retry.Default.ApplyTo(&bo.ClientOptions)
	svc, err := azblob.NewClientFromConnectionString(cs, bo)
	if err != nil {
		log.Fatal(err)
	}
	name := fmt.Sprintf("photos%d", time.Now().UnixNano())
	if _, err := svc.CreateContainer(ctx, name, nil); err != nil {
		log.Fatal(err)
	}
	defer func() { _, _ = svc.DeleteContainer(ctx, name, nil) }()

	type Employee struct {
		Department          string `table:",pk"`
		ID                  string `table:",rk"`
		FirstName, LastName string
		Photo               []byte `largeentity:"offload"`
	}
	tbl, err := table.New[table.Dynamic](c, nil)
	if err != nil {
		log.Fatal(err)
	}
	staff, err := largeentity.New[Employee](tbl, svc.ServiceClient().NewContainerClient(name), nil)
	if err != nil {
		log.Fatal(err)
	}
	jpeg := bytes.Repeat([]byte{0xff, 0xd8, 0xff}, 100_000) // 300 KB
	res, err := staff.Insert(ctx, Employee{Department: "Sales", ID: "000223", FirstName: "Jun", LastName: "Cao", Photo: jpeg})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("photo in a blob of", res.Blobs[0].Size, "bytes")

	e, err := staff.Get(ctx, "Sales", "000223", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(e.Value.FirstName, e.Value.LastName, "photo intact:", bytes.Equal(e.Value.Photo, jpeg))

	names, err := staff.Get(ctx, "Sales", "000223", &largeentity.GetOptions{Select: []string{"FirstName", "LastName"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(names.Value.FirstName, names.Value.LastName, "photo read:", names.Value.Photo != nil)
	// Output:
	// photo in a blob of 300000 bytes
	// Jun Cao photo intact: true
	// Jun Cao photo read: false
}
