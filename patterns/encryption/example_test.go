package encryption_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"log"
	"time"

	"github.com/tablekit/tablekit/patterns/encryption"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

// Employee is the guide's employee, with a confidential email address.
type Employee struct {
	table.Meta
	Department string `table:",pk"`
	ID         string `table:",rk"`
	FirstName  string
	Email      string
}

// newKey returns 32 random bytes: in production, a key unwrapped from Key
// Vault (see the package documentation).
func newKey() []byte {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		log.Fatal(err)
	}
	return k
}

// exampleTable creates a table for an example and returns it with a
// function that deletes it.
func exampleTable(ctx context.Context, prefix string) (*table.Table[table.Dynamic], func()) {
	cs, err := tabletest.ConnectionString()
	if err != nil {
		log.Fatal(err)
	}
	svc, err := table.NewServiceClientFromConnectionString(cs, nil)
	if err != nil {
		log.Fatal(err)
	}
	name := fmt.Sprintf("%s%d", prefix, time.Now().UnixNano())
	if err := table.CreateTable(ctx, svc, name); err != nil {
		log.Fatal(err)
	}
	tbl, err := table.New[table.Dynamic](svc.NewClient(name))
	if err != nil {
		log.Fatal(err)
	}
	return tbl, func() {
		if err := table.DeleteTable(ctx, svc, name); err != nil {
			log.Print(err)
		}
	}
}

// An encrypted email address, found again by its blind index: the service
// stores ciphertext and an HMAC, never the address.
func Example() {
	ctx := context.Background()
	tbl, drop := exampleTable(ctx, "staff")
	defer drop()

	keys, err := encryption.NewStaticKeys("k1", map[string][]byte{"k1": newKey()})
	if err != nil {
		log.Fatal(err)
	}
	staff, err := encryption.New[Employee](tbl, &encryption.Options{
		Fields:   []string{"Email"},
		Keys:     keys,
		Indexes:  []encryption.Index{{Field: "Email", Normalize: encryption.TrimLower}},
		IndexKey: newKey(),
	})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := staff.Insert(ctx, Employee{Department: "Sales", ID: "000223", FirstName: "Jo", Email: "Jo@Contoso.com"}); err != nil {
		log.Fatal(err)
	}

	stored, err := tbl.Get(ctx, "Sales", "000223", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("stored Email: %T of %d bytes\n", stored.Properties["Email"], len(stored.Properties["Email"].([]byte)))

	for e, err := range staff.Lookup(ctx, "Email", "jo@contoso.com", table.PartitionKey("Sales")) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("found:", e.FirstName, e.Email)
	}
	// Output:
	// stored Email: []uint8 of 48 bytes
	// found: Jo Jo@Contoso.com
}

// Key rotation: writes move to key k2 at once, rows under k1 still read,
// and Reencrypt rewrites them (each with its ETag) so k1 can be retired.
func ExampleTable_Reencrypt() {
	ctx := context.Background()
	tbl, drop := exampleTable(ctx, "rotate")
	defer drop()

	k1, k2 := newKey(), newKey()
	opts := func(keys encryption.KeyProvider) *encryption.Options {
		return &encryption.Options{Fields: []string{"Email"}, Keys: keys}
	}
	before, err := encryption.NewStaticKeys("k1", map[string][]byte{"k1": k1})
	if err != nil {
		log.Fatal(err)
	}
	old, err := encryption.New[Employee](tbl, opts(before))
	if err != nil {
		log.Fatal(err)
	}
	for _, id := range []string{"000001", "000002", "000003"} {
		if _, err := old.Insert(ctx, Employee{Department: "Sales", ID: id, Email: id + "@contoso.com"}); err != nil {
			log.Fatal(err)
		}
	}

	rotated, err := encryption.NewStaticKeys("k2", map[string][]byte{"k1": k1, "k2": k2})
	if err != nil {
		log.Fatal(err)
	}
	staff, err := encryption.New[Employee](tbl, opts(rotated))
	if err != nil {
		log.Fatal(err)
	}
	p, err := staff.Reencrypt(ctx, &encryption.ReencryptOptions{
		Progress: func(p encryption.Progress) error {
			// Save p.Cursor to resume an interrupted run (ReencryptOptions.Query.Cursor).
			return nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("scanned %d, rewritten %d, done %v\n", p.Scanned, p.Rewritten, p.Done)

	retired, err := encryption.NewStaticKeys("k2", map[string][]byte{"k2": k2})
	if err != nil {
		log.Fatal(err)
	}
	onlyK2, err := encryption.New[Employee](tbl, opts(retired))
	if err != nil {
		log.Fatal(err)
	}
	e, err := onlyK2.Get(ctx, "Sales", "000002", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(e.Email)
	// Output:
	// scanned 3, rewritten 3, done true
	// 000002@contoso.com
}
