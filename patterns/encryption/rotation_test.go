package encryption_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/encryption"
	"github.com/tablekit/tablekit/patterns/table"
)

// insertN inserts rows rk0..rk(n-1) offset by from, with distinct SSNs.
func insertN(t *testing.T, p *encryption.Table[Person], from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		a := alice()
		a.RowKey, a.SSN = fmt.Sprintf("r%02d", i), fmt.Sprintf("ssn-%02d", i)
		if _, err := p.Insert(context.Background(), a); err != nil {
			t.Fatal(err)
		}
	}
}

func keyIDs(t *testing.T, r *rig, n int) string {
	t.Helper()
	var ids []string
	for i := range n {
		ids = append(ids, r.storedKeyID(t, "Sales", fmt.Sprintf("r%02d", i), "SSN"))
	}
	return strings.Join(ids, ",")
}

func TestRotationAndReencrypt(t *testing.T) {
	testrig.StorageOnly(t, "which row a page holds first: key order; TestCosmosEncryption covers Query, Find and Reencrypt on Cosmos DB")
	r := newRig(t)
	ctx := context.Background()
	insertN(t, people(t, r, keysOf(t, "k1", "k1")), 0, 5)
	p := people(t, r, keysOf(t, "k2", "k1", "k2")) // rotated: writes k2, reads both
	insertN(t, p, 5, 2)
	if got := keyIDs(t, r, 7); got != "k1,k1,k1,k1,k1,k2,k2" {
		t.Fatalf("key ids before: %s", got)
	}
	for i := range 7 {
		v, err := p.Get(ctx, "Sales", fmt.Sprintf("r%02d", i), nil)
		if err != nil || v.Value.SSN != fmt.Sprintf("ssn-%02d", i) {
			t.Fatalf("row %d: %+v, %v", i, v.Value.SSN, err)
		}
	}

	// Stop after the first page (2 rows), deterministically.
	stop := errors.New("stop")
	r.Faults.Reset()
	q := &table.Query{Filter: table.PartitionKey("Sales"), PageSize: 2}
	prog, err := p.Reencrypt(ctx, &encryption.ReencryptOptions{Query: q, Progress: func(encryption.Progress) error { return stop }})
	if !errors.Is(err, stop) || prog.Scanned != 2 || prog.Rewritten != 2 || prog.Cursor == "" || prog.Done {
		t.Fatalf("first run: %+v, %v", prog, err)
	}
	// One page of 2 rows, one merge per row (the next page was fetched ahead).
	merges := 0
	for _, req := range r.Faults.Requests() {
		if req.Merge {
			merges++
		}
	}
	if merges != 2 {
		t.Errorf("%d merges for 2 rows", merges)
	}
	if got := keyIDs(t, r, 7); got != "k2,k2,k1,k1,k1,k2,k2" {
		t.Fatalf("after the first page: %s", got)
	}
	// Resume from the cursor reported.
	q.Cursor = prog.Cursor
	var pages int
	prog, err = p.Reencrypt(ctx, &encryption.ReencryptOptions{Query: q, Progress: func(encryption.Progress) error { pages++; return nil }})
	if err != nil || !prog.Done || prog.Scanned != 5 || prog.Rewritten != 3 || pages != 3 {
		t.Fatalf("resumed: %+v, %v, %d pages", prog, err, pages)
	}
	if got := keyIDs(t, r, 7); got != "k2,k2,k2,k2,k2,k2,k2" {
		t.Fatalf("after: %s", got)
	}
	// Every value still decrypts, and key 1 is no longer needed.
	only2 := people(t, r, keysOf(t, "k2", "k2"))
	all, err := table.Collect(only2.Query(ctx, nil))
	if err != nil || len(all) != 7 {
		t.Fatalf("%d rows, %v", len(all), err)
	}
	// A second run rewrites nothing.
	r.Faults.Reset()
	prog, err = p.Reencrypt(ctx, nil)
	if err != nil || prog.Rewritten != 0 || prog.Scanned != 7 || r.Faults.Count() != 1 {
		t.Fatalf("idempotent run: %+v, %v, %d requests", prog, err, r.Faults.Count())
	}
}

func TestReencryptCancelled(t *testing.T) {
	r := newRig(t)
	insertN(t, people(t, r, keysOf(t, "k1", "k1")), 0, 4)
	p := people(t, r, keysOf(t, "k2", "k1", "k2"))
	ctx, cancel := context.WithCancel(context.Background())
	q := &table.Query{PageSize: 2}
	prog, err := p.Reencrypt(ctx, &encryption.ReencryptOptions{Query: q, Progress: func(encryption.Progress) error { cancel(); return nil }})
	if !errors.Is(err, context.Canceled) || prog.Rewritten != 2 {
		t.Fatalf("cancelled: %+v, %v", prog, err)
	}
	q.Cursor = prog.Cursor
	prog, err = p.Reencrypt(context.Background(), &encryption.ReencryptOptions{Query: q})
	if err != nil || prog.Rewritten != 2 || !prog.Done {
		t.Fatalf("resumed: %+v, %v", prog, err)
	}
	if got := keyIDs(t, r, 4); got != "k2,k2,k2,k2" {
		t.Fatalf("after: %s", got)
	}
}

// A writer that changes a row between Reencrypt's read and its rewrite is
// never overwritten: the rewrite is conditioned on the ETag read, fails
// with 412, and the row read again is found current.
func TestReencryptRacesAWriter(t *testing.T) {
	testrig.StorageOnly(t, "which row a page holds first: key order; TestCosmosEncryption covers Query, Find and Reencrypt on Cosmos DB")
	r := newRig(t)
	ctx := context.Background()
	insertN(t, people(t, r, keysOf(t, "k1", "k1")), 0, 2)
	p := people(t, r, keysOf(t, "k2", "k1", "k2"))
	writer := people(t, &rig{tbl: testrig.NewTable[table.Dynamic](t, r.raw)}, keysOf(t, "k2", "k1", "k2")) // without r's faults
	raced := false
	r.Faults.Inject(faults.Fault{Match: func(req *http.Request) bool {
		if !faults.IsMerge(req) || !strings.Contains(req.URL.Path, "r01") || raced {
			return false
		}
		raced = true // the concurrent write, before Reencrypt's merge reaches the service
		if _, err := writer.Modify(ctx, "Sales", "r01", func(v *Person) error { v.SSN = "changed"; return nil }, nil); err != nil {
			t.Error(err)
		}
		return false
	}})
	prog, err := p.Reencrypt(ctx, nil)
	if err != nil || !raced || prog.Rewritten != 1 || prog.Raced != 1 {
		t.Fatalf("%+v, %v (raced %v)", prog, err, raced)
	}
	statuses := []int{}
	for _, req := range r.Faults.Requests() {
		if req.Merge {
			statuses = append(statuses, req.Status)
		}
	}
	if fmt.Sprint(statuses) != "[204 412]" {
		t.Errorf("merge statuses %v, want the second rejected by its ETag", statuses)
	}
	v, err := p.Get(ctx, "Sales", "r01", nil)
	if err != nil || v.Value.SSN != "changed" {
		t.Fatalf("the concurrent write was lost: %q, %v", v.Value.SSN, err)
	}
	if got := keyIDs(t, r, 2); got != "k2,k2" {
		t.Fatalf("key ids: %s", got)
	}
}

// Reencrypt with Indexes recomputes the blind indexes after the index key
// changed; before, Find under the new key finds nothing.
func TestReencryptIndexes(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	keys := keysOf(t, "k1", "k1")
	insertN(t, people(t, r, keys), 0, 3)
	o := r.opts()
	o.IndexKey = key("index 2")
	p, err := encryption.New[Person](r.tbl, keys, secret, o)
	if err != nil {
		t.Fatal(err)
	}
	if n := count(t, p.Find(ctx, "", "SSN", "ssn-01")); n != 0 {
		t.Fatalf("found %d under a new index key", n)
	}
	prog, err := p.Reencrypt(ctx, &encryption.ReencryptOptions{Indexes: true})
	if err != nil || prog.Rewritten != 3 {
		t.Fatalf("%+v, %v", prog, err)
	}
	if n := count(t, p.Find(ctx, "", "SSN", "ssn-01")); n != 1 {
		t.Fatalf("found %d after Reencrypt", n)
	}
	// The rows are current now: a second run rewrites none.
	r.Faults.Reset()
	prog, err = p.Reencrypt(ctx, &encryption.ReencryptOptions{Indexes: true})
	if err != nil || prog.Rewritten != 0 || prog.Scanned != 3 || r.Faults.Count() != 1 {
		t.Fatalf("second run: %+v, %v, %d requests", prog, err, r.Faults.Count())
	}
}

// Reencrypt reads every property whatever the Query's Select (a row read
// without its encrypted fields would look current), and refuses a Limit,
// which would end the run with rows left under an old key.
func TestReencryptReadsWholeRows(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	insertN(t, people(t, r, keysOf(t, "k1", "k1")), 0, 3)
	keys := &counting{KeyProvider: keysOf(t, "k2", "k1", "k2")}
	p := people(t, r, keys)
	r.Faults.Reset()
	if _, err := p.Reencrypt(ctx, &encryption.ReencryptOptions{Query: &table.Query{Limit: 1}}); !errors.Is(err, encryption.ErrInvalid) || r.Faults.Count() != 0 {
		t.Fatalf("Limit: %v after %d requests", err, r.Faults.Count())
	}
	keys.current.Store(0)
	prog, err := p.Reencrypt(ctx, &encryption.ReencryptOptions{Query: &table.Query{Select: []string{"Name"}, PageSize: 1}})
	if err != nil || !prog.Done || prog.Rewritten != 3 {
		t.Fatalf("Select: %+v, %v", prog, err)
	}
	if got := keyIDs(t, r, 3); got != "k2,k2,k2" {
		t.Fatalf("key ids: %s", got)
	}
	// The current key is read once per run, not once per row.
	if n := keys.current.Load(); n != 1 {
		t.Errorf("CurrentKey called %d times in one run", n)
	}
	// A Fields merge that sends no encrypted field seals nothing.
	keys.current.Store(0)
	if _, err := p.Update(ctx, Person{PartitionKey: "Sales", RowKey: "r00", Name: "N"}, azcore.ETagAny, table.Fields("Name")); err != nil {
		t.Fatal(err)
	}
	if n := keys.current.Load(); n != 0 {
		t.Errorf("CurrentKey called %d times for a merge of a plain field", n)
	}
	if v, err := p.Get(ctx, "Sales", "r00", nil); err != nil || v.Value.Name != "N" || v.Value.SSN != "ssn-00" {
		t.Fatalf("%+v, %v", v.Value, err)
	}
}

// counting counts CurrentKey calls.
type counting struct {
	encryption.KeyProvider
	current atomic.Int32
}

func (c *counting) CurrentKey(ctx context.Context) (string, []byte, error) {
	c.current.Add(1)
	return c.KeyProvider.CurrentKey(ctx)
}

// OnError skips the rows that cannot be re-encrypted (a tampered value, a
// row of another type with a plain property of the same name) and counts
// them; its error stops the run.
func TestReencryptSkipsBadRows(t *testing.T) {
	testrig.StorageOnly(t, "which row a page holds first: key order; TestCosmosEncryption covers Query, Find and Reencrypt on Cosmos DB")
	r := newRig(t)
	ctx := context.Background()
	insertN(t, people(t, r, keysOf(t, "k1", "k1")), 0, 3)
	tamper(t, r, "Sales", "r01", func(d *table.Dynamic) {
		c := append([]byte{}, d.Properties["SSN"].([]byte)...)
		c[len(c)-1] ^= 1
		d.Properties["SSN"] = c
	})
	if _, err := r.tbl.Insert(ctx, table.Dynamic{PartitionKey: "Other", RowKey: "x", Properties: map[string]any{"SSN": "another type's plain value"}}); err != nil {
		t.Fatal(err)
	}
	p := people(t, r, keysOf(t, "k2", "k1", "k2"))
	var skipped []string
	prog, err := p.Reencrypt(ctx, &encryption.ReencryptOptions{OnError: func(pk, rk string, err error) error {
		if !errors.Is(err, encryption.ErrDecrypt) {
			t.Errorf("%s/%s: %v", pk, rk, err)
		}
		skipped = append(skipped, pk+"/"+rk)
		return nil
	}})
	if err != nil || !prog.Done || prog.Skipped != 2 || prog.Rewritten != 2 || fmt.Sprint(skipped) != "[Other/x Sales/r01]" {
		t.Fatalf("%+v, %v, skipped %v", prog, err, skipped)
	}
	stop := errors.New("stop")
	prog, err = p.Reencrypt(ctx, &encryption.ReencryptOptions{OnError: func(string, string, error) error { return stop }})
	if !errors.Is(err, stop) || prog.Skipped != 0 {
		t.Fatalf("%+v, %v", prog, err)
	}
}

func TestReencryptStopsAtATamperedRow(t *testing.T) {
	testrig.StorageOnly(t, "which row a page holds first: key order; TestCosmosEncryption covers Query, Find and Reencrypt on Cosmos DB")
	r := newRig(t)
	insertN(t, people(t, r, keysOf(t, "k1", "k1")), 0, 2)
	tamper(t, r, "Sales", "r01", func(d *table.Dynamic) { d.Properties["SSN"] = "plain" })
	p := people(t, r, keysOf(t, "k2", "k1", "k2"))
	prog, err := p.Reencrypt(context.Background(), nil)
	var e *encryption.Error
	if !errors.Is(err, encryption.ErrDecrypt) || !errors.As(err, &e) || e.RowKey != "r01" || prog.Rewritten != 1 {
		t.Fatalf("%+v, %v", prog, err)
	}
}
