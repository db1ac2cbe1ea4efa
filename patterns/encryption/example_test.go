package encryption_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"log"

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

// An encrypted email address, found again by its blind index: the service
// stores ciphertext and an HMAC, never the address.
func Example() {
	ctx := context.Background()
	c, cleanup, err := tabletest.ScratchTable(ctx, "staff")
	if err != nil {
		log.Fatal(err)
	}
	defer cleanup()
	tbl, err := table.New[table.Dynamic](c, nil)
	if err != nil {
		log.Fatal(err)
	}

	keys, err := encryption.NewStaticKeys("k1", map[string][]byte{"k1": newKey()})
	if err != nil {
		log.Fatal(err)
	}
	staff, err := encryption.New[Employee](tbl, keys, []string{"Email"}, &encryption.Options{
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
	email := stored.Value.Properties["Email"]
	fmt.Printf("stored Email: %T of %d bytes\n", email, len(email.([]byte)))

	for e, err := range staff.Find(ctx, "Sales", "Email", "jo@contoso.com") {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("found:", e.RowKey, e.Value.FirstName, e.Value.Email)
	}
	// Output:
	// stored Email: []uint8 of 48 bytes
	// found: 000223 Jo Jo@Contoso.com
}

// Key rotation: writes move to key k2 at once, rows under k1 still read,
// and Reencrypt rewrites them (each with its ETag) so k1 can be retired.
func ExampleTable_Reencrypt() {
	ctx := context.Background()
	c, cleanup, err := tabletest.ScratchTable(ctx, "rotate")
	if err != nil {
		log.Fatal(err)
	}
	defer cleanup()
	tbl, err := table.New[table.Dynamic](c, nil)
	if err != nil {
		log.Fatal(err)
	}

	k1, k2 := newKey(), newKey()
	fields := []string{"Email"}
	before, err := encryption.NewStaticKeys("k1", map[string][]byte{"k1": k1})
	if err != nil {
		log.Fatal(err)
	}
	old, err := encryption.New[Employee](tbl, before, fields, nil)
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
	staff, err := encryption.New[Employee](tbl, rotated, fields, nil)
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
	onlyK2, err := encryption.New[Employee](tbl, retired, fields, nil)
	if err != nil {
		log.Fatal(err)
	}
	e, err := onlyK2.Get(ctx, "Sales", "000002", nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(e.Value.Email)
	// Output:
	// scanned 3, rewritten 3, done true
	// 000002@contoso.com
}
