package encryption_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/encryption"
	"github.com/tablekit/tablekit/patterns/table"
)

// contact has no property Cosmos DB reserves (Person's ID is one: id, in
// any case).
type contact struct {
	table.Meta
	PartitionKey, RowKey string
	Name, Email, SSN     string
}

// TestCosmosEncryption: on each service (the Cosmos DB simulation returns
// rows in no key order), Query returns every row decrypted, Find exactly
// the matches of a blind index, and Reencrypt visits every row across
// pages and rewrites those under an old key.
func TestCosmosEncryption(t *testing.T) {
	t.Parallel()
	testrig.Services(t, func(t *testing.T, tr *testrig.Rig) {
		r := newRigOn(t, tr)
		ctx := context.Background()
		old, err := encryption.New[contact](r.tbl, keysOf(t, "k1", "k1"), []string{"Email", "SSN"}, r.opts())
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for i := range 12 {
			p := contact{PartitionKey: "Sales", RowKey: fmt.Sprintf("%03d", i), Name: "N", Email: fmt.Sprintf("user%d@contoso.com", i%3), SSN: fmt.Sprint(i)}
			if _, err := old.Insert(ctx, p); err != nil {
				t.Fatal(err)
			}
			want = append(want, p.RowKey)
		}
		var got []string
		for p, err := range old.Query(ctx, &table.Query{Filter: table.PartitionKey("Sales"), PageSize: 5}) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, p.RowKey)
		}
		if slices.Sort(got); !slices.Equal(got, want) {
			t.Fatalf("Query = %v", got)
		}
		var found []string
		for e, err := range old.Find(ctx, "Sales", "Email", "USER1@contoso.com") {
			if err != nil {
				t.Fatal(err)
			}
			found = append(found, e.RowKey)
		}
		if slices.Sort(found); !slices.Equal(found, []string{"001", "004", "007", "010"}) {
			t.Fatalf("Find = %v", found)
		}
		rotated, err := encryption.New[contact](r.tbl, keysOf(t, "k2", "k1", "k2"), []string{"Email", "SSN"}, r.opts())
		if err != nil {
			t.Fatal(err)
		}
		if p, err := rotated.Reencrypt(ctx, &encryption.ReencryptOptions{Query: &table.Query{PageSize: 5}}); err != nil || p.Scanned != 12 || p.Rewritten != 12 || !p.Done {
			t.Fatalf("Reencrypt = %+v, %v", p, err)
		}
		if p, err := rotated.Reencrypt(ctx, nil); err != nil || p.Scanned != 12 || p.Rewritten != 0 {
			t.Fatalf("Reencrypt again = %+v, %v", p, err)
		}
		tr.Claim(t, testrig.Capability{Pattern: "encryption", Operation: "Query, QueryEntities, QueryPage, Find", How: tr.Which("as table's Query (key order); Find verifies each match", "as table's Query (every row, in no order; a Limit caps); Find verifies each match")})
		tr.Claim(t, testrig.Capability{Pattern: "encryption", Operation: "Reencrypt", How: "page by page with a cursor, each row rewritten on its ETag: no order needed"})
	})
}
