package secondaryindex_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/reserved"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/largeentity"
	"github.com/tablekit/tablekit/patterns/secondaryindex"
	"github.com/tablekit/tablekit/patterns/table"
)

// Person is an employee with a photo kept in a blob when large.
type Person struct {
	Department string `table:",pk"`
	ID         string `table:",rk"`
	FirstName  string
	LastName   string
	Email      string
	Photo      []byte `largeentity:"offload"`
}

// note is another pattern's row in the people's partition.
type note struct {
	Dept string `table:",pk"`
	Key  string `table:",rk"`
	Text string
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// largeRig is a Store of Person whose photos go to blobs, with a unique
// Listed email index and a keys-only name index, all in one partition.
type largeRig struct {
	*testrig.Rig
	c        *aztables.Client
	store    *secondaryindex.Store[Person]
	photos   *largeentity.Store[Person]
	blobs    *container.Client
	clock    *clock
	blobHost string
}

func personIndexes() []secondaryindex.Index[Person] {
	return []secondaryindex.Index[Person]{
		{Name: "email", Unique: true, Holds: secondaryindex.Listed, Fields: []string{"FirstName", "LastName"}, On: []string{"Email"}},
		{Name: "name", Holds: secondaryindex.KeysOnly, On: []string{"LastName", "FirstName"}},
	}
}

func newLargeRig(t *testing.T) *largeRig {
	t.Helper()
	r := &largeRig{Rig: testrig.New(t), clock: &clock{t: time.Now()}}
	r.c = r.Table()
	tbl := testrig.NewTable[table.Dynamic](t, r.c)
	blobs := r.Container()
	r.blobs = blobs
	u, err := url.Parse(blobs.URL())
	if err != nil {
		t.Fatal(err)
	}
	r.blobHost = u.Host
	if r.photos, err = largeentity.New[Person](tbl, blobs, &largeentity.Options[Person]{Now: r.clock.Now, Grace: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if r.store, err = secondaryindex.New(tbl, &secondaryindex.Options[Person]{Primary: "empid", Indexes: personIndexes(), Large: r.photos, Retry: &testrig.Fast}); err != nil {
		t.Fatal(err)
	}
	r.Faults.Reset()
	return r
}

// trips checks the table and blob requests since the last check.
func (r *largeRig) trips(t *testing.T, what string, tables, blobs int) {
	t.Helper()
	nt, nb := 0, 0
	for _, q := range r.Faults.Requests() {
		if u, err := url.Parse(q.URL); err == nil && u.Host == r.blobHost {
			nb++
		} else {
			nt++
		}
	}
	if nt != tables || nb != blobs {
		t.Fatalf("%s: %d table and %d blob requests, want %d and %d", what, nt, nb, tables, blobs)
	}
	r.Faults.Reset()
}

func picture(n int, seed uint64) []byte {
	g := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(g.Uint32())
	}
	return b
}

// An indexed entity with a large photo: the photo goes to a blob first,
// then one transaction writes the primary (pointing at it) and its
// copies; reads return it whole; a rename neither reads nor writes it;
// copies never hold it; replaced versions' blobs are swept.
func TestLargeValuesOfAnIndexedEntity(t *testing.T) {
	t.Parallel()
	r := newLargeRig(t)
	ctx := context.Background()
	jo := Person{Department: "Sales", ID: "000223", FirstName: "Jo", LastName: "Jones", Email: "jo@contoso.com", Photo: picture(100<<10, 1)}
	if _, err := r.store.Insert(ctx, jo); err != nil {
		t.Fatal(err)
	}
	r.trips(t, "Insert", 1, 1)
	got, err := r.store.Get(ctx, "Sales", "000223")
	if err != nil || !bytes.Equal(got.Value.Photo, jo.Photo) || got.RowKey != "000223" {
		t.Fatalf("Get = %v, %v", got.RowKey, err)
	}
	r.trips(t, "Get", 1, 1)
	byEmail, err := r.store.Lookup(ctx, "Sales", "email", "jo@contoso.com", nil)
	if err != nil || !byEmail.FromCopy || byEmail.Value.LastName != "Jones" || byEmail.Value.Photo != nil {
		t.Fatalf("Lookup = %+v, %v", byEmail, err)
	}
	r.trips(t, "Lookup", 1, 0)
	// A rename: 2 table round trips, the photo neither read nor written.
	renamed, err := r.store.Modify(ctx, "Sales", "000223", func(p *Person) error {
		if p.Photo != nil {
			return errors.New("Modify read the photo")
		}
		p.LastName = "Smith"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	r.trips(t, "Modify", 2, 0)
	got, err = r.store.Get(ctx, "Sales", "000223")
	if err != nil || got.Value.LastName != "Smith" || !bytes.Equal(got.Value.Photo, jo.Photo) || got.ETag != renamed.ETag {
		t.Fatalf("after the rename: %+v, %v", got.Value.LastName, err)
	}
	// Update with the same photo keeps its blob; with a new one uploads it.
	got.Value.FirstName = "Joanna"
	res, err := r.store.Update(ctx, got.Value, got.ETag)
	if err != nil {
		t.Fatal(err)
	}
	r.Faults.Reset()
	got.Value.Photo = picture(90<<10, 2)
	if _, err := r.store.Update(ctx, got.Value, res.ETag); err != nil {
		t.Fatal(err)
	}
	r.trips(t, "Update with a new photo", 2, 1)
	if e, err := r.store.Get(ctx, "Sales", "000223"); err != nil || !bytes.Equal(e.Value.Photo, got.Value.Photo) {
		t.Fatalf("after the new photo: %v", err)
	}
	r.clean(t)
	// The first photo's blob is no version's now: swept after Grace.
	r.clock.Advance(2 * time.Hour)
	if sw, err := r.photos.Sweep(ctx); err != nil || sw.Deleted != 1 {
		t.Fatalf("Sweep = %+v, %v; want the replaced photo deleted", sw, err)
	}
	if e, err := r.store.Get(ctx, "Sales", "000223"); err != nil || !bytes.Equal(e.Value.Photo, got.Value.Photo) {
		t.Fatalf("after Sweep: %v", err)
	}
	// A second entity with the same email: ErrDuplicate, and its photo's
	// blob is deleted (the write certainly did not apply).
	r.Faults.Reset()
	_, err = r.store.Insert(ctx, Person{Department: "Sales", ID: "000224", Email: "jo@contoso.com", Photo: picture(100<<10, 3)})
	if !errors.Is(err, secondaryindex.ErrDuplicate) {
		t.Fatalf("a taken email: %v", err)
	}
	r.trips(t, "Insert of a taken email", 1, 2)
	if sw, err := r.photos.Sweep(ctx); err != nil || sw.Listed != 1 {
		t.Fatalf("blobs after the refused insert: %+v, %v", sw, err)
	}
	// Delete leaves the photo to Sweep.
	if err := r.store.Delete(ctx, "Sales", "000223", azcore.ETagAny); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(2 * time.Hour)
	if sw, err := r.photos.Sweep(ctx); err != nil || sw.Deleted != 1 {
		t.Fatalf("Sweep after Delete = %+v, %v", sw, err)
	}
}

// A photo's blob deleted while the primary, unchanged, still points at
// it: Get reads the primary again (a blob gone because the entity changed
// is read anew), finds the same ETag, and fails with largeentity.ErrCorrupt
// (largeentity's reread, the one loop both packages run), after 2 table and
// 2 blob requests, never returning data or looping on; so does the primary
// fetched by Find and by List.
func TestLargeBlobMissingUnderTheSameETag(t *testing.T) {
	t.Parallel()
	r := newLargeRig(t)
	ctx := context.Background()
	jo := Person{Department: "Sales", ID: "000223", FirstName: "Jo", LastName: "Jones", Email: "jo@contoso.com", Photo: picture(100<<10, 1)}
	if _, err := r.store.Insert(ctx, jo); err != nil {
		t.Fatal(err)
	}
	var names []string
	for pager := r.blobs.NewListBlobsFlatPager(nil); pager.More(); {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range page.Segment.BlobItems {
			names = append(names, *b.Name)
		}
	}
	if len(names) != 1 {
		t.Fatalf("blobs %v, want the photo's", names)
	}
	if _, err := r.blobs.NewBlobClient(names[0]).Delete(ctx, nil); err != nil {
		t.Fatal(err)
	}
	r.Faults.Reset()
	got, err := r.store.Get(ctx, "Sales", "000223")
	if !errors.Is(err, largeentity.ErrCorrupt) || got.Value.Photo != nil {
		t.Fatalf("Get of a primary pointing at a missing blob = %d bytes, %v; want largeentity.ErrCorrupt", len(got.Value.Photo), err)
	}
	r.trips(t, "Get of a primary pointing at a missing blob", 2, 2)
	for _, err = range r.store.Find(ctx, "Sales", "name", []any{"Jones"}, nil) {
		break
	}
	if !errors.Is(err, largeentity.ErrCorrupt) {
		t.Fatalf("Find fetching that primary = %v, want largeentity.ErrCorrupt", err)
	}
	for _, err = range r.store.List(ctx, "Sales", nil) {
		break
	}
	if !errors.Is(err, largeentity.ErrCorrupt) {
		t.Fatalf("List = %v, want largeentity.ErrCorrupt", err)
	}
}

func (r *largeRig) clean(t *testing.T) {
	t.Helper()
	d, err := r.store.Check(context.Background(), "Sales")
	if err != nil || !d.Clean() {
		t.Fatalf("Check = %+v, %v", d, err)
	}
}

// Options.Large is refused where a copy would hold a large value, over
// another table.
func TestLargeRefusals(t *testing.T) {
	t.Parallel()
	r := newLargeRig(t)
	tbl := testrig.NewTable[table.Dynamic](t, r.c)
	other := testrig.NewTable[table.Dynamic](t, r.Table())
	key := func(p *Person) []string { return []string{p.Email} }
	for name, o := range map[string]secondaryindex.Options[Person]{
		"whole":        {Large: r.photos, Indexes: []secondaryindex.Index[Person]{{Name: "e", On: []string{"Email"}, Key: key}}},
		"listed photo": {Large: r.photos, Indexes: []secondaryindex.Index[Person]{{Name: "e", Holds: secondaryindex.Listed, Fields: []string{"Photo"}, On: []string{"Email"}, Key: key}}},
	} {
		if _, err := secondaryindex.New(tbl, &o); !errors.Is(err, secondaryindex.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := secondaryindex.New(other, &secondaryindex.Options[Person]{Large: r.photos}); !errors.Is(err, secondaryindex.ErrInvalid) {
		t.Errorf("Large over another table: %v", err)
	}
}

// The ops forms: an entity's change joins another pattern's in one
// transaction (1 round trip); a taken unique value is ErrDuplicate, a
// missing copy ErrDrift; UpdateOps, ModifyOps and DeleteOps read once and
// condition the write on the ETag read.
func TestOpsForms(t *testing.T) {
	t.Parallel()
	r := newRig(t, intraIndexes(), false)
	notes := testrig.NewTable[note](t, r.tbl.Client())
	ctx := context.Background()
	noteOf := func(key string) table.Change {
		return table.Change{By: "notes", Ops: []table.Op{notes.InsertOp(note{Dept: "Sales", Key: "note!" + key, Text: key})}}
	}
	ch, err := r.store.InsertOps(ctx, jo())
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Ops) != 3 || len(ch.Intents) != 0 {
		t.Fatalf("InsertOps: %d ops, %d intents; want the primary and 2 copies", len(ch.Ops), len(ch.Intents))
	}
	res, err := r.tbl.Apply(ctx, ch, noteOf("hired"))
	if err != nil {
		t.Fatal(err)
	}
	if n := r.Faults.Count(); n != 1 || len(res.Ops) != 4 {
		t.Fatalf("Apply: %d round trips, %d ops", n, len(res.Ops))
	}
	r.clean(t, "Sales")
	// The same email for another id, with a note: ErrDuplicate, nothing.
	other := jo()
	other.ID = "000224"
	ch, err = r.store.InsertOps(ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.tbl.Apply(ctx, ch, noteOf("hired twice")); !errors.Is(err, secondaryindex.ErrDuplicate) || !errors.Is(err, table.ErrAlreadyExists) {
		t.Fatalf("a taken email: %v", err)
	}
	if _, err := notes.Get(ctx, "Sales", "note!hired twice", nil); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("the note of a failed transaction: %v", err)
	}
	// ModifyOps: 1 read, then the write with a note: 1 transaction.
	r.Faults.Reset()
	ch, err = r.store.ModifyOps(ctx, "Sales", "000223", func(e *Employee) error { e.LastName = "Smith"; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.tbl.Apply(ctx, ch, noteOf("renamed")); err != nil {
		t.Fatal(err)
	}
	if n := r.Faults.Count(); n != 2 {
		t.Fatalf("ModifyOps + Apply: %d round trips, want 2", n)
	}
	got, err := r.store.Get(ctx, "Sales", "000223")
	if err != nil || got.Value.LastName != "Smith" {
		t.Fatalf("after ModifyOps: %+v, %v", got.Value, err)
	}
	r.clean(t, "Sales")
	// UpdateOps with a stale ETag: refused at the read.
	if _, err := r.store.UpdateOps(ctx, jo(), res.Ops[0].ETag); !errors.Is(err, table.ErrPreconditionFailed) {
		t.Fatalf("UpdateOps with a stale ETag: %v", err)
	}
	// A change made, then another write, then the change applied: 412.
	ch, err = r.store.UpdateOps(ctx, got.Value, got.ETag)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.store.Modify(ctx, "Sales", "000223", func(e *Employee) error { e.Age++; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := r.tbl.Apply(ctx, ch); !errors.Is(err, table.ErrPreconditionFailed) {
		t.Fatalf("a change applied after another write: %v", err)
	}
	// A copy gone missing (drift): DeleteOps' transaction fails with
	// ErrDrift; Delete skips it.
	if err := testrig.NewTable[table.Dynamic](t, r.Clean(r.tbl.Client())).Delete(ctx, "Sales", keys.Join("email", "jonesj@contoso.com"), azcore.ETagAny); err != nil {
		t.Fatal(err)
	}
	ch, err = r.store.DeleteOps(ctx, "Sales", "000223", azcore.ETagAny)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.tbl.Apply(ctx, ch, noteOf("left")); !errors.Is(err, secondaryindex.ErrDrift) {
		t.Fatalf("DeleteOps over drift: %v", err)
	}
	if err := r.store.Delete(ctx, "Sales", "000223", azcore.ETagAny); err != nil {
		t.Fatal(err)
	}
	r.clean(t, "Sales")
}

// With OtherPartition indexes the change carries the intent:
// eventual.Queue.Apply commits it with the ops, and the worker keeps the
// copies.
func TestOpsFormsWithIntents(t *testing.T) {
	t.Parallel()
	r := newRig(t, intraIndexes(), true)
	notes := testrig.NewTable[note](t, r.tbl.Client())
	ctx := context.Background()
	ch, err := r.store.InsertOps(ctx, jo())
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.Intents) != 1 {
		t.Fatalf("InsertOps with OtherPartition indexes: %d intents", len(ch.Intents))
	}
	if _, err := r.tbl.Apply(ctx, ch); !errors.Is(err, table.ErrInvalidBatch) {
		t.Fatalf("table.Apply of a change with an intent: %v", err)
	}
	note := table.Change{By: "notes", Ops: []table.Op{notes.InsertOp(note{Dept: "Sales", Key: "note!1", Text: "hired"})}}
	if _, err := r.q.Apply(ctx, r.tbl.Client(), ch, note); err != nil {
		t.Fatal(err)
	}
	w := r.worker(t)
	drain(t, w)
	e, err := r.store.Lookup(ctx, "", "age", 29, nil)
	if err == nil {
		t.Fatalf("age is not unique: Lookup = %+v", e)
	}
	found, err := table.Collect(r.store.Find(ctx, "", "age", 29, nil))
	if err != nil || len(found) != 1 || found[0].RowKey != "000223" {
		t.Fatalf("the organisation-wide copy: %+v, %v", found, err)
	}
	r.clean(t, "Sales")
}

// List and ListPage return the partition's entities with their keys as T
// has them, and nothing of the other rows there; RangePage pages through
// an index and resumes in a fresh Store from its cursor.
func TestListAndPages(t *testing.T) {
	testrig.StorageOnly(t, "pages in key order; TestCosmosSecondaryIndex pages on Cosmos DB")
	t.Parallel()
	r := newRig(t, intraIndexes(), false)
	notes := testrig.NewTable[note](t, r.tbl.Client())
	ctx := context.Background()
	var want []string
	for i := range 7 {
		e := jo()
		e.ID, e.Email, e.LastName = fmt.Sprintf("%06d", 500+i), fmt.Sprint("e", i, "@x"), fmt.Sprint("L", 6-i)
		if _, err := r.store.Insert(ctx, e); err != nil {
			t.Fatal(err)
		}
		want = append(want, e.ID)
	}
	if _, err := notes.Insert(ctx, note{Dept: "Sales", Key: "note!x"}); err != nil {
		t.Fatal(err)
	}
	all, err := table.Collect(r.store.List(ctx, "Sales", nil))
	var ids []string
	for _, e := range all {
		if e.RowKey != e.Value.ID || e.ETag == "" {
			t.Fatalf("List entity %+v", e)
		}
		ids = append(ids, e.RowKey)
	}
	if err != nil || !slices.Equal(ids, want) {
		t.Fatalf("List = %v, %v; want %v", ids, err, want)
	}
	// pageOf reads every page, each in a fresh Store, and checks each
	// page's round trips: 1, + perItem per entity it fetches.
	pageOf := func(what string, perItem int, next func(table.Cursor, *secondaryindex.Store[Employee]) (table.Page[secondaryindex.Entity[Employee]], error)) []string {
		var got []string
		var cursor table.Cursor
		for range 10 {
			fresh, err := secondaryindex.New(r.tbl, &secondaryindex.Options[Employee]{Primary: "empid", Indexes: intraIndexes()})
			if err != nil {
				t.Fatal(err)
			}
			r.Faults.Reset()
			p, err := next(cursor, fresh)
			if err != nil {
				t.Fatal(err)
			}
			if n := r.Faults.Count(); n != 1+len(p.Items)*perItem {
				t.Fatalf("%s: a page of %d took %d round trips", what, len(p.Items), n)
			}
			for _, e := range p.Items {
				got = append(got, e.RowKey)
			}
			if cursor = p.Next; cursor == "" {
				return got
			}
		}
		t.Fatalf("%s: no end", what)
		return nil
	}
	listed := pageOf("list", 0, func(c table.Cursor, s *secondaryindex.Store[Employee]) (table.Page[secondaryindex.Entity[Employee]], error) {
		return s.ListPage(ctx, "Sales", c, &secondaryindex.ListOptions{PageSize: 3})
	})
	if !slices.Equal(listed, want) {
		t.Fatalf("ListPage = %v", listed)
	}
	named := pageOf("names", 1, func(c table.Cursor, s *secondaryindex.Store[Employee]) (table.Page[secondaryindex.Entity[Employee]], error) {
		return s.RangePage(ctx, "Sales", "name", []any{"L1"}, []any{"L5"}, c, &secondaryindex.LookupOptions{PageSize: 2})
	})
	if wantNamed := []string{"000505", "000504", "000503", "000502", "000501"}; !slices.Equal(named, wantNamed) {
		t.Fatalf("RangePage by name = %v, want %v", named, wantNamed)
	}
	if _, err := r.store.ListPage(ctx, "a/b", "", nil); !errors.Is(err, secondaryindex.ErrInvalid) {
		t.Fatalf("ListPage of an invalid partition: %v", err)
	}
	_ = eventual.ErrInvalid
}

// TestListRefusesBadPartitions: List and ListPage refuse an empty or
// reserved PartitionKey before the network, as Get does.
func TestListRefusesBadPartitions(t *testing.T) {
	t.Parallel()
	r := newLargeRig(t)
	ctx := context.Background()
	for _, pk := range []string{"", reserved.Prefix + "x", "Sa/les"} {
		for _, err := range r.store.List(ctx, pk, nil) {
			if !errors.Is(err, secondaryindex.ErrInvalid) || !errors.Is(err, table.ErrInvalidKey) {
				t.Errorf("List(%q): %v", pk, err)
			}
		}
		if _, err := r.store.ListPage(ctx, pk, "", nil); !errors.Is(err, secondaryindex.ErrInvalid) || !errors.Is(err, table.ErrInvalidKey) {
			t.Errorf("ListPage(%q): %v", pk, err)
		}
	}
	if n := r.Faults.Count(); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}
