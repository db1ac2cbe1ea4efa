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
	cs, err := tabletest.ConnectionString()
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	svc, err := table.NewServiceClientFromConnectionString(cs, nil)
	if err != nil {
		log.Fatal(err)
	}
	name := fmt.Sprintf("staff%d", time.Now().UnixNano())
	if err := table.CreateTable(ctx, svc, name); err != nil {
		log.Fatal(err)
	}
	defer func() { _ = table.DeleteTable(ctx, svc, name) }()
	bo := &azblob.ClientOptions{}
	retry.Default.ApplyTo(&bo.ClientOptions)
	blobs, err := azblob.NewClientFromConnectionString(cs, bo)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := blobs.CreateContainer(ctx, name, nil); err != nil {
		log.Fatal(err)
	}
	defer func() { _, _ = blobs.DeleteContainer(ctx, name, nil) }()

	type Employee struct {
		table.Meta
		FirstName, LastName string
		Photo               []byte `largeentity:"offload"`
	}
	tbl, _ := table.New[table.Dynamic](svc.NewClient(name))
	staff, err := largeentity.New[Employee](tbl, &largeentity.Options{Blobs: blobs.ServiceClient().NewContainerClient(name)})
	if err != nil {
		log.Fatal(err)
	}
	jpeg := bytes.Repeat([]byte{0xff, 0xd8, 0xff}, 100_000) // 300 KB
	res, err := staff.Insert(ctx, "Sales", "000223", Employee{FirstName: "Jun", LastName: "Cao", Photo: jpeg})
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
