package table_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/retry"
)

type staff struct {
	table.Meta
	Department string `table:",pk"`
	ID         string `table:",rk"`
	FirstName  string
	Email      string
	Age        int32
	Photo      []byte
	Logins     int64
	HireDate   time.Time
}

func fullStaff() staff {
	return staff{Department: "Sales", ID: "000006", FirstName: "Jo", Email: "jo@contoso.com", Age: 41,
		Photo: []byte{1, 2, 3}, Logins: 7, HireDate: time.Date(2020, 1, 2, 0, 0, 0, 0, time.UTC)}
}

// TestFieldsMergeKeepsOtherProperties is the new user's report: a merge of
// a struct with only FirstName set wiped Email, Age, Photo and Logins.
// Fields merges only the named properties; a nil []byte is no property.
func TestFieldsMergeKeepsOtherProperties(t *testing.T) {
	t.Parallel()
	tb, ft := newTable[staff](t)
	ctx := context.Background()
	if _, err := tb.Insert(ctx, fullStaff()); err != nil {
		t.Fatal(err)
	}
	cur, err := tb.Get(ctx, "Sales", "000006", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Update(ctx, staff{Department: "Sales", ID: "000006", FirstName: "Renamed"}, cur.ETag, table.Fields("FirstName")); err != nil {
		t.Fatal(err)
	}
	got, _ := value(tb.Get(ctx, "Sales", "000006", nil))
	want := fullStaff()
	want.FirstName = "Renamed"
	if got.FirstName != "Renamed" || got.Email != want.Email || got.Age != want.Age || string(got.Photo) != string(want.Photo) || got.Logins != want.Logins {
		t.Fatalf("after a Fields merge: %+v", got)
	}
	// Upsert and UpdateOp take Fields too.
	if _, err := tb.Upsert(ctx, staff{Department: "Sales", ID: "000006", Age: 42}, table.Fields("Age")); err != nil {
		t.Fatal(err)
	}
	got, _ = value(tb.Get(ctx, "Sales", "000006", nil))
	if _, err := tb.Submit(ctx, []table.Op{tb.UpdateOp(staff{Department: "Sales", ID: "000006", Logins: 8}, got.ETag, table.Fields("Logins"))}, nil); err != nil {
		t.Fatal(err)
	}
	got, _ = value(tb.Get(ctx, "Sales", "000006", nil))
	if got.Age != 42 || got.Logins != 8 || got.Email != want.Email || got.FirstName != "Renamed" {
		t.Fatalf("after Upsert and UpdateOp with Fields: %+v", got)
	}
	// A merge of the whole struct with a nil Photo keeps the photo; an
	// empty one stores an empty Binary.
	got.Photo = nil
	r, err := tb.Update(ctx, got, got.ETag, table.Merge)
	if err != nil {
		t.Fatal(err)
	}
	if g, _ := value(tb.Get(ctx, "Sales", "000006", nil)); string(g.Photo) != string(want.Photo) {
		t.Fatalf("nil []byte merged over the photo: %v", g.Photo)
	}
	got.Photo, got.ETag = []byte{}, r.ETag
	if _, err := tb.Update(ctx, got, got.ETag, table.Merge); err != nil {
		t.Fatal(err)
	}
	if g, _ := value(tb.Get(ctx, "Sales", "000006", nil)); g.Photo == nil || len(g.Photo) != 0 {
		t.Fatalf("empty []byte: %v", g.Photo)
	}
	// Names are checked against T before the network.
	ft.Reset()
	for _, m := range []table.Mode{table.Fields("Frstname"), table.Fields(), {}} {
		if _, err := tb.Update(ctx, got, got.ETag, m); !errors.Is(err, table.ErrInvalidEntity) {
			t.Errorf("Update with %v = %v", m, err)
		}
		if op := tb.UpsertOp(got, m); !errors.Is(op.Err(), table.ErrInvalidEntity) {
			t.Errorf("UpsertOp with %v = %v", m, op.Err())
		}
	}
	if ft.Count() != 0 {
		t.Fatalf("%d requests sent", ft.Count())
	}
}

// TestModify runs read-modify-writes: 4 writers x 10 increments with
// responses lost at random, an fn error that writes nothing, and keys
// that must not change.
func TestModify(t *testing.T) {
	t.Parallel()
	f := newOutcomeFixture(t)
	ctx := context.Background()
	if _, err := f.other.Insert(ctx, counter{PartitionKey: "p", RowKey: "r"}); err != nil {
		t.Fatal(err)
	}
	f.ft.Reset()
	res, err := f.tb.Modify(ctx, "p", "r", func(c *counter) error { c.N++; return nil }, nil)
	if err != nil || res.ETag == "" || f.ft.Count() != 2 {
		t.Fatalf("Modify = %+v, %v in %d round trips; want 2", res, err, f.ft.Count())
	}
	for range 10 {
		f.ft.Inject(faults.Fault{Match: writes, LoseResponse: true})
	}
	fast := &table.ModifyOptions{Retry: &retry.Policy{Default: time.Millisecond, Max: 20 * time.Millisecond, MaxRetries: 200, FullJitter: true}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	applied, unknown := 1, 0
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				_, err := f.tb.Modify(ctx, "p", "r", func(c *counter) error { c.N++; return nil }, fast)
				mu.Lock()
				switch {
				case err == nil:
					applied++
				case errors.Is(err, table.ErrOutcomeUnknown):
					unknown++
				default:
					t.Error(err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	got, _ := f.stored(t, "r")
	if got.N < int64(applied) || got.N > int64(applied+unknown) {
		t.Fatalf("stored %d, with %d applied and %d unknown", got.N, applied, unknown)
	}
	// fn's error writes nothing and is returned as it is.
	stop := errors.New("not today")
	if _, err := f.tb.Modify(ctx, "p", "r", func(*counter) error { return stop }, nil); !errors.Is(err, stop) {
		t.Fatalf("Modify with a failing fn = %v", err)
	}
	if _, err := f.tb.Modify(ctx, "p", "r", func(c *counter) error { c.RowKey = "x"; return nil }, nil); !errors.Is(err, table.ErrInvalidKey) {
		t.Fatalf("Modify changing the keys = %v", err)
	}
	if _, err := f.tb.Modify(ctx, "p", "missing", func(*counter) error { return nil }, nil); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("Modify of a missing entity = %v", err)
	}
	if after, _ := f.stored(t, "r"); after.N != got.N {
		t.Fatalf("stored %d, want %d", after.N, got.N)
	}
}
