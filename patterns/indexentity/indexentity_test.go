package indexentity_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/testrig"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/indexentity"
	"github.com/tablekit/tablekit/patterns/table"
)

// TestRoundTrips: every operation of the same-partition store costs what
// its documentation says, asserted at the transport, and after each the
// partition's index entities are exactly what its employees call for
// (empty index entities deleted).
func TestRoundTrips(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	ana, jo, ben := emp("Sales", 123, "Jones"), emp("Sales", 223, "Jones"), emp("Sales", 155, "Smith")
	for _, e := range []Employee{ana, jo, ben} {
		res, err := f.idx.Insert(ctx, e)
		if err != nil || res.ETag == "" || res.Conflicts != 0 || res.Intent != "" {
			t.Fatalf("Insert %s: %+v, %v", e.ID, res, err)
		}
		f.trips(t, "Insert", 2)
	}
	f.check(t, "Sales")

	ids, err := f.idx.FindIDs(ctx, "Sales", "Jones")
	if want := []indexentity.ID{{"Sales", ana.ID}, {"Sales", jo.ID}}; err != nil || !slices.Equal(ids, want) {
		t.Fatalf("FindIDs = %v, %v; want %v", ids, err, want)
	}
	f.trips(t, "FindIDs", 1)
	got, err := find(ctx, f.idx, "Sales", "Jones")
	if err != nil || len(got) != 2 || got[0].FirstName != ana.FirstName || got[1].FirstName != jo.FirstName {
		t.Fatalf("Find = %+v, %v", got, err)
	}
	f.trips(t, "Find of 2", 3)
	if ids, err := f.idx.FindIDs(ctx, "Sales", "Nobody"); err != nil || len(ids) != 0 {
		t.Fatalf("FindIDs of a value nobody has = %v, %v", ids, err)
	}
	f.trips(t, "FindIDs of nobody", 1)

	// The index entities are reserved rows: a typed query of the partition
	// returns the employees only.
	all, err := table.Collect(f.employees.Query(ctx, &table.Query{Filter: table.PartitionKey("Sales")}))
	if err != nil || len(all) != 3 {
		t.Fatalf("typed query of the partition: %d entities, %v", len(all), err)
	}
	f.Faults.Reset()

	// An update that keeps the value: the read and one replace.
	jo.Age = 30
	if _, err := f.idx.Update(ctx, jo, azcore.ETagAny); err != nil {
		t.Fatal(err)
	}
	f.trips(t, "Update, value unchanged", 2)
	// A rename: the read, two index entity reads, one transaction of three.
	cur, err := f.employees.Get(ctx, "Sales", ana.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.Faults.Reset()
	cur.Value.LastName = "Smith"
	if _, err := f.idx.Update(ctx, cur.Value, cur.ETag); err != nil {
		t.Fatal(err)
	}
	f.trips(t, "Update, renamed", 4)
	f.check(t, "Sales")
	if _, err := f.idx.Update(ctx, cur.Value, cur.ETag); !errors.Is(err, table.ErrPreconditionFailed) {
		t.Fatalf("Update with a stale ETag: %v", err)
	}
	f.trips(t, "Update with a stale ETag", 1)

	// Delete the last Jones: the index entity goes with him.
	if err := f.idx.Delete(ctx, "Sales", jo.ID, azcore.ETagAny); err != nil {
		t.Fatal(err)
	}
	f.trips(t, "Delete", 3)
	f.check(t, "Sales")
	if lists := f.storedLists(t, "Sales"); len(lists) != 1 || len(lists["Smith"]) != 2 {
		t.Fatalf("lists after the last Jones left: %v", lists)
	}
	if err := f.idx.Delete(ctx, "Sales", jo.ID, azcore.ETagAny); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("Delete of a missing employee: %v", err)
	}
	if _, err := f.idx.Update(ctx, jo, azcore.ETagAny); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("Update of a missing employee: %v", err)
	}
	if _, err := f.idx.Insert(ctx, ben); !errors.Is(err, table.ErrAlreadyExists) {
		t.Fatalf("Insert of an existing employee: %v", err)
	}
	f.check(t, "Sales")
}

// TestValidation: bad options and bad input are refused before the
// network with ErrInvalid (which matches table.ErrInvalid; key errors
// table.ErrInvalidKey too, a missing ETag table.ErrNoETag), in one line
// naming the package; nothing is sent. nil Options is the same-partition
// store.
func TestValidation(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	q := &eventual.Queue{}
	news := map[string]error{
		"no table":      second(indexentity.New[Employee](nil, "LastName", lastName, nil)),
		"no value":      second(indexentity.New[Employee, string](f.employees, "LastName", nil, nil)),
		"no name":       second(indexentity.New(f.employees, "", lastName, nil)),
		"name with !":   second(indexentity.New(f.employees, "Last!Name", lastName, nil)),
		"name too long": second(indexentity.New(f.employees, strings.Repeat("n", 49), lastName, nil)),
	}
	for name, o := range map[string]*indexentity.Options{
		"Table and Blobs": {Table: f.employees.Client(), Blobs: f.Container(), Queue: q},
		"Table, no Queue": {Table: f.employees.Client()},
		"Queue, no store": {Queue: q},
		"Concurrency < 0": {Concurrency: -1},
		"Blobs, no Queue": {Blobs: f.Container()},
	} {
		news[name] = second(indexentity.New(f.employees, "LastName", lastName, o))
	}
	f.Faults.Reset()

	long := strings.Repeat("j", keys.MaxKeyLength)
	key := []error{indexentity.ErrInvalid, table.ErrInvalid, table.ErrInvalidKey}
	plain := []error{indexentity.ErrInvalid, table.ErrInvalid}
	noETag := []error{indexentity.ErrInvalid, table.ErrInvalid, table.ErrNoETag}
	cases := map[string]struct {
		err  error
		want []error
	}{
		"Insert, RowKey with /":   {second(f.idx.Insert(ctx, Employee{Department: "Sales", ID: "a/b", LastName: "Jones"})), key},
		"Insert, value too long":  {second(f.idx.Insert(ctx, Employee{Department: "Sales", ID: "1", LastName: long})), key},
		"Update, no ETag":         {second(f.idx.Update(ctx, emp("Sales", 1, "Jones"), "")), noETag},
		"Update, value too long":  {second(f.idx.Update(ctx, Employee{Department: "Sales", ID: "1", LastName: long}, azcore.ETagAny)), key},
		"Delete, no ETag":         {f.idx.Delete(ctx, "Sales", "1", ""), noETag},
		"Delete, bad key":         {f.idx.Delete(ctx, "Sales", "a#b", azcore.ETagAny), key},
		"Delete, no partition":    {f.idx.Delete(ctx, "", "1", azcore.ETagAny), key},
		"FindIDs, no partition":   {second(f.idx.FindIDs(ctx, "", "Jones")), plain},
		"FindIDs, value too long": {second(f.idx.FindIDs(ctx, "Sales", long)), key},
		"Find, bad pk":            {second(find(ctx, f.idx, "a?b", "Jones")), key},
	}
	for name, err := range news {
		cases["New, "+name] = struct {
			err  error
			want []error
		}{err, plain}
	}
	for name, c := range cases {
		for _, w := range c.want {
			if !errors.Is(c.err, w) {
				t.Errorf("%s: %v, want %v", name, c.err, w)
			}
		}
		if c.err != nil && (strings.Contains(c.err.Error(), "\n") || !strings.HasPrefix(c.err.Error(), "indexentity: ")) {
			t.Errorf("%s: %q is not one line starting with the package's name", name, c.err)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := f.idx.Insert(cancelled, emp("Sales", 1, "Jones")); !errors.Is(err, context.Canceled) {
		t.Errorf("Insert with a cancelled context: %v", err)
	}
	if _, err := find(cancelled, f.idx, "Sales", "Jones"); !errors.Is(err, context.Canceled) {
		t.Errorf("Find with a cancelled context: %v", err)
	}
	f.trips(t, "invalid requests", 0)
}

func second[V any](_ V, err error) error { return err }

// New with nil Options is the same-partition store, with the defaults.
func TestNewWithNilOptions(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	x, err := indexentity.New(f.employees, "LastName", lastName, nil)
	if err != nil || x.Name() != "LastName" {
		t.Fatalf("New with nil Options: %v", err)
	}
	ana := emp("Sales", 1, "Jones")
	if _, err := x.Insert(ctx, ana); err != nil {
		t.Fatal(err)
	}
	f.trips(t, "Insert (same partition)", 2)
	if ids, err := x.FindIDs(ctx, "Sales", "Jones"); err != nil || !slices.Equal(ids, []indexentity.ID{{PartitionKey: "Sales", RowKey: ana.ID}}) {
		t.Fatalf("FindIDs: %v, %v", ids, err)
	}
	f.check(t, "Sales")
}

// fill returns the most ids of width characters (RowKeys in partition pk,
// after the id 0...0) that value Jones's index entity holds, found by
// bisection against the package's own limit.
func fill(x *indexentity.Index[Employee], listPK, pk string, width int) []indexentity.ID {
	ids := make([]indexentity.ID, 20000) // more than fit
	for i := range ids {
		ids[i] = indexentity.ID{PartitionKey: pk, RowKey: fmt.Sprintf("z%0*d", width-1, i)}
	}
	lo, hi := 1, len(ids)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if indexentity.Fits(x, listPK, "Jones", ids[:mid]) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return ids[:lo]
}

// TestListLimits: a list spreads over several properties as it grows;
// one that would pass an entity's 1 MiB is refused after the read and
// before the transaction (table.ErrTooLarge, pointing to the blob store),
// and shrinks again by removals.
func TestListLimits(t *testing.T) {
	testrig.StorageOnly(t, "Table Storage's 1 MiB list; TestCosmosListLimits covers Cosmos DB's 2 MB")
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	ana := Employee{Department: "Sales", ID: fmt.Sprintf("a%059d", 1), LastName: "Jones"}
	bo := Employee{Department: "Sales", ID: fmt.Sprintf("b%059d", 1), LastName: "Jones"}
	if _, err := f.idx.Insert(ctx, ana); err != nil {
		t.Fatal(err)
	}
	// Ids of 60 characters: 122 bytes each as the service counts them.
	full := fill(f.idx, "Sales", "Sales", 60)
	lo := len(full)
	if lo < 8000 || lo > 8600 {
		t.Fatalf("an index entity holds %d ids of 60 characters; about 8,590 fit in 1 MiB as the service counts it", lo)
	}
	// Fill the list to its limit with ana in it: stored in several
	// properties, read back whole.
	full[0].RowKey = ana.ID
	if err := indexentity.SeedList(ctx, f.idx, "Sales", "Jones", full); err != nil {
		t.Fatal(err)
	}
	row, err := f.clean.Get(ctx, "Sales", keys.Join(indexentity.KeyPrefix, "LastName", "Jones"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(row.Value.Properties); n < 16 {
		t.Fatalf("a full list in %d properties, want 16 or more (64 KiB each)", n)
	}
	ids, err := f.idx.FindIDs(ctx, "Sales", "Jones")
	if err != nil || len(ids) != lo {
		t.Fatalf("FindIDs of the full list: %d ids, %v; want %d", len(ids), err, lo)
	}
	f.Faults.Reset()
	_, err = f.idx.Insert(ctx, bo)
	if !errors.Is(err, table.ErrTooLarge) || !strings.Contains(err.Error(), "Options.Blobs") {
		t.Fatalf("Insert into a full list: %v, want ErrTooLarge naming the blob store", err)
	}
	f.trips(t, "Insert into a full list (the read only)", 1)
	if _, err := f.employees.Get(ctx, "Sales", bo.ID, nil); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("the refused employee was written: %v", err)
	}
	// A removal from the full list is a write of a smaller entity.
	if err := f.idx.Delete(ctx, "Sales", ana.ID, azcore.ETagAny); err != nil {
		t.Fatal(err)
	}
	if ids, err := f.idx.FindIDs(ctx, "Sales", "Jones"); err != nil || len(ids) != lo-1 || slices.Contains(ids, indexentity.ID{PartitionKey: "Sales", RowKey: ana.ID}) {
		t.Fatalf("after the delete: %d ids, %v", len(ids), err)
	}
	if _, err := f.idx.Insert(ctx, bo); err != nil {
		t.Fatalf("Insert after a removal made room: %v", err)
	}
}

// TestCrashBeforeTransaction: an operation stopped after its reads and
// before its transaction (the crash table's middle rows) changed nothing.
func TestCrashBeforeTransaction(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	ana := emp("Sales", 1, "Jones")
	if _, err := f.idx.Insert(ctx, ana); err != nil {
		t.Fatal(err)
	}
	f.Faults.Reset()
	crash := errors.New("crash")
	indexentity.SetHook(f.idx, func(step string) error {
		if step == "transaction" {
			return crash
		}
		return nil
	})
	renamed := ana
	renamed.LastName = "Smith"
	for name, err := range map[string]error{
		"Insert": second(f.idx.Insert(ctx, emp("Sales", 2, "Jones"))),
		"Update": second(f.idx.Update(ctx, renamed, azcore.ETagAny)),
		"Delete": f.idx.Delete(ctx, "Sales", ana.ID, azcore.ETagAny),
	} {
		if !errors.Is(err, crash) {
			t.Errorf("%s: %v, want the crash", name, err)
		}
	}
	for _, r := range f.Faults.Requests() {
		if r.Method != "GET" {
			t.Fatalf("a write was sent: %s %s", r.Method, r.URL)
		}
	}
	f.check(t, "Sales")
	if lists := f.storedLists(t, "Sales"); len(lists) != 1 || len(lists["Jones"]) != 1 {
		t.Fatalf("lists: %v", lists)
	}
}

// TestOddValues: any string is a value: empty, with characters keys
// refuse, quotes, control characters, astral characters; each is escaped
// into its index entity's key (or blob name) and looked up exactly.
func TestOddValues(t *testing.T) {
	t.Parallel()
	values := []string{"", "O'Brien / #1?", "\x01ctl\x7f", "Ünïcødé 😀", "a!b", "~tk~"}
	f := newFixture(t)
	r := newRig(t, blobStore)
	ctx := context.Background()
	for i, v := range values {
		e := emp("Sales", i, v)
		if _, err := f.idx.Insert(ctx, e); err != nil {
			t.Fatalf("same partition, Insert %q: %v", v, err)
		}
		if _, err := r.idx.Insert(ctx, e); err != nil {
			t.Fatalf("blob, Insert %q: %v", v, err)
		}
	}
	r.runWorker(t)
	for i, v := range values {
		want := []indexentity.ID{{PartitionKey: "Sales", RowKey: emp("Sales", i, "").ID}}
		for name, idx := range map[string]*indexentity.Index[Employee]{"same partition": f.idx, "blob": r.idx} {
			if ids, err := idx.FindIDs(ctx, "Sales", v); err != nil || !slices.Equal(ids, want) {
				t.Errorf("%s: FindIDs(%q) = %v, %v; want %v", name, v, ids, err, want)
			}
		}
	}
	f.check(t, "Sales")
	r.check(t)
}

// Find leaves out an id whose entity is gone or has another
// value now, and a read that fails ends it with the error.
func TestFindDropsWhatChanged(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	ana, jo, ben := emp("Sales", 123, "Jones"), emp("Sales", 223, "Jones"), emp("Sales", 155, "Jones")
	for _, e := range []Employee{ana, jo, ben} {
		if _, err := f.idx.Insert(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	// Behind the index's back: jo renamed, ben deleted.
	jo.LastName = "Smith"
	if _, err := f.employees.Upsert(ctx, jo, table.Replace); err != nil {
		t.Fatal(err)
	}
	if err := f.employees.Delete(ctx, ben.Department, ben.ID, "*"); err != nil {
		t.Fatal(err)
	}
	got, err := find(ctx, f.idx, "Sales", "Jones")
	if err != nil || len(got) != 1 || got[0].ID != ana.ID {
		t.Fatalf("Find = %+v, %v; want only Ana", got, err)
	}
	for range 6 { // more than the client's retries
		f.Faults.Inject(faults.Fault{Match: func(q *http.Request) bool {
			return q.Method == http.MethodGet && strings.Contains(q.URL.Path, "RowKey='"+ana.ID+"'")
		}, Status: 500})
	}
	if got, err := find(ctx, f.idx, "Sales", "Jones"); err == nil {
		t.Fatalf("Find with a read failing: %+v, want its error", got)
	}
}

// Find and FindIDs take the indexed value as T holds it (rule 2 of the
// verb table): an int32 field's index is looked up with an int32, a
// string field's with a string; a value of another type is ErrInvalid
// naming the index and the type wanted, nothing sent. Numbers are keyed
// in decimal: an index of strings holding the same text keeps the same
// lists.
func TestFindTakesTheValueAsTHoldsIt(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	byAge, err := indexentity.New(f.employees, "Age", func(e *Employee) int32 { return e.Age }, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := emp("Sales", 1, "Jones") // Age 21
	if _, err := byAge.Insert(ctx, e); err != nil {
		t.Fatal(err)
	}
	f.Faults.Reset()
	ids, err := byAge.FindIDs(ctx, "Sales", int32(21))
	if err != nil || len(ids) != 1 || ids[0].RowKey != e.ID {
		t.Fatalf("FindIDs(int32(21)) = %v, %v", ids, err)
	}
	f.trips(t, "FindIDs", 1)
	var got []Employee
	for v, err := range byAge.Find(ctx, "Sales", int32(21)) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, v.Value)
	}
	if len(got) != 1 || got[0].ID != e.ID {
		t.Fatalf("Find(int32(21)) = %v", got)
	}
	byText, err := indexentity.New(f.employees, "Age", func(e *Employee) string { return fmt.Sprint(e.Age) }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ids, err := byText.FindIDs(ctx, "Sales", "21"); err != nil || len(ids) != 1 {
		t.Fatalf("the same index keyed by text: %v, %v", ids, err)
	}
	f.Faults.Reset()
	for what, err := range map[string]error{
		"FindIDs of an int in an int32 index":   second(byAge.FindIDs(ctx, "Sales", 21)),
		"FindIDs of a string in an int32 index": second(byAge.FindIDs(ctx, "Sales", "21")),
		"Find of an int in a string index": func() error {
			for _, err := range f.idx.Find(ctx, "Sales", 21) {
				return err
			}
			return nil
		}(),
	} {
		if !errors.Is(err, indexentity.ErrInvalid) || !errors.Is(err, table.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", what, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "want int32") && !strings.Contains(msg, "want string") || !strings.Contains(msg, "index ") {
			t.Errorf("%s: %q names neither the index nor the type wanted", what, msg)
		}
	}
	f.trips(t, "lookups of the wrong type", 0)
}
