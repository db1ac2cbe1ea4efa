package secondaryindex_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tablekit/tablekit/internal/reserved"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/secondaryindex"
	"github.com/tablekit/tablekit/patterns/table"
)

// New with nil Options is a Store of primaries only, named "id!<id>".
func TestNewWithNilOptions(t *testing.T) {
	t.Parallel()
	r := testrig.New(t)
	ctx := context.Background()
	tbl := testrig.NewTable[table.Dynamic](t, r.Table())
	s, err := secondaryindex.New[Employee](tbl, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Insert(ctx, jo()); err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Get(ctx, "Sales", "id!000223", nil); err != nil {
		t.Fatalf("the primary row under the default Primary: %v", err)
	}
	e, err := s.Get(ctx, "Sales", "000223")
	if err != nil || e.Value != jo() || e.PartitionKey != "Sales" || e.RowKey != "000223" || e.ETag == "" || e.FromCopy {
		t.Fatalf("Get: %+v, %v", e, err)
	}
	if d, err := s.Check(ctx, ""); err != nil || d.Entities != 1 || !d.Clean() {
		t.Fatalf("Check: %+v, %v", d, err)
	}
}

type noKeys struct{ Name string }

type reservedField struct {
	PK    string `table:",pk"`
	ID    string `table:",rk"`
	TkRef string
}

type withExtra struct {
	PK    string         `table:",pk"`
	ID    string         `table:",rk"`
	Extra map[string]any `table:",extra"`
}

// Every validation error matches ErrInvalid and table.ErrInvalid (key
// errors also table.ErrInvalidKey, a missing ETag table.ErrNoETag), is one
// line naming the package, and nothing is sent.
func TestValidationErrors(t *testing.T) {
	t.Parallel()
	r := newRig(t, intraIndexes(), false)
	ctx := context.Background()
	s := r.store
	extra, err := secondaryindex.New[withExtra](r.tbl, nil)
	if err != nil {
		t.Fatal(err)
	}
	badKey := jo()
	badKey.Department = "a/b"
	badID := jo()
	badID.ID = strings.Repeat("9", 1100)
	long := jo()
	long.Email = strings.Repeat("x", 1100)
	second := func(_ any, err error) error { return err }
	key := []error{secondaryindex.ErrInvalid, table.ErrInvalid, table.ErrInvalidKey}
	plain := []error{secondaryindex.ErrInvalid, table.ErrInvalid}
	noETag := []error{secondaryindex.ErrInvalid, table.ErrInvalid, table.ErrNoETag}
	for _, c := range []struct {
		name string
		err  error
		want []error
	}{
		{"New without a table", second(secondaryindex.New[Employee](nil, nil)), plain},
		{"New of a type without keys", second(secondaryindex.New[noKeys](r.tbl, nil)), plain},
		{"New of a type with a reserved property", second(secondaryindex.New[reservedField](r.tbl, nil)), plain},
		{"New with a Primary name with '_'", second(secondaryindex.New(r.tbl, &secondaryindex.Options[Employee]{Primary: "emp_id"})), plain},
		{"New with an index named like the default Primary", second(secondaryindex.New(r.tbl, &secondaryindex.Options[Employee]{Indexes: []secondaryindex.Index[Employee]{{Name: "id", On: []string{"Email"}, Key: func(*Employee) []string { return nil }}}})), plain},
		{"Insert, a PartitionKey with /", second(s.Insert(ctx, badKey)), key},
		{"Insert, an id too long", second(s.Insert(ctx, badID)), key},
		{"Insert, an index value too long", second(s.Insert(ctx, long)), key},
		{"Insert, a reserved property in an extra map", second(extra.Insert(ctx, withExtra{PK: "Sales", ID: "1", Extra: map[string]any{secondaryindex.RefProperty: "HR!000007"}})), plain},
		{"Get, a PartitionKey with /", second(s.Get(ctx, "a/b", "1")), key},
		{"Get, a reserved PartitionKey", second(s.Get(ctx, reserved.Prefix+"x", "1")), key},
		{"Delete, a reserved PartitionKey", s.Delete(ctx, reserved.Prefix+"x", "1", azcore.ETagAny), key},
		{"Modify, a reserved PartitionKey", second(s.Modify(ctx, reserved.Prefix+"x", "1", func(*Employee) error { return nil })), key},
		{"Get, an id too long", second(s.Get(ctx, "Sales", badID.ID)), key},
		{"Update, no ETag", second(s.Update(ctx, jo(), "")), noETag},
		{"Update, an id too long", second(s.Update(ctx, badID, azcore.ETagAny)), key},
		{"Modify, a PartitionKey with /", second(s.Modify(ctx, "a/b", "1", func(*Employee) error { return nil })), key},
		{"Delete, no ETag", s.Delete(ctx, "Sales", "1", ""), noETag},
		{"Delete, an id too long", s.Delete(ctx, "Sales", badID.ID, azcore.ETagAny), key},
		{"Lookup, no such index", second(s.Lookup(ctx, "Sales", "nope", "x", nil)), plain},
		{"Lookup, a non-unique index", second(s.Lookup(ctx, "Sales", "name", []any{"x"}, nil)), plain},
		{"Lookup, no value", second(s.Lookup(ctx, "Sales", "email", nil, nil)), plain},
		{"Lookup, a PartitionKey with /", second(s.Lookup(ctx, "a/b", "email", "x", nil)), key},
		{"Find, no such index", lastErr(s.Find(ctx, "Sales", "nope", "x", nil)), plain},
		{"Verify, no such index", third(s.Verify(ctx, "nope", secondaryindex.Entity[Employee]{})), plain},
	} {
		for _, w := range c.want {
			if !errors.Is(c.err, w) {
				t.Errorf("%s: %v, want %v", c.name, c.err, w)
			}
		}
		if c.err != nil && (strings.Contains(c.err.Error(), "\n") || !strings.HasPrefix(c.err.Error(), "secondaryindex: ")) {
			t.Errorf("%s: %q is not one line starting with the package's name", c.name, c.err)
		}
	}
	if n := r.Faults.Count(); n != 0 {
		t.Fatalf("invalid requests sent %d requests", n)
	}
	// Modify cannot change the keys: refused after the read, nothing written.
	if _, err := s.Insert(ctx, jo()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Modify(ctx, "Sales", "000223", func(e *Employee) error { e.ID = "000224"; return nil }); !errors.Is(err, secondaryindex.ErrInvalid) {
		t.Fatalf("Modify changing the id: %v", err)
	}
	r.clean(t, "Sales")
}

func third[A, B any](_ A, _ B, err error) error { return err }

func lastErr[V any](seq func(func(V, error) bool)) (last error) {
	for _, err := range seq {
		last = err
	}
	return last
}

// Update with azcore.ETagAny from 8 goroutines at once, each writing other
// index values: every Update applies (a writer in between sends it back to
// the read), and the copies end exactly those of the last version.
func TestConcurrentUpdateAny(t *testing.T) {
	t.Parallel()
	r := newRig(t, intraIndexes(), false)
	ctx := context.Background()
	s, err := secondaryindex.New(r.tbl, &secondaryindex.Options[Employee]{Primary: "empid", Indexes: intraIndexes(), Retry: &testrig.Contention})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Insert(ctx, jo()); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				e := jo()
				e.Email, e.LastName, e.Age = fmt.Sprintf("jo%d.%d@contoso.com", g, i), fmt.Sprint("Jones", g), int64(i)
				if _, err := s.Update(ctx, e, azcore.ETagAny); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	r.clean(t, "Sales")
	cur, err := s.Get(ctx, "Sales", "000223")
	if err != nil {
		t.Fatal(err)
	}
	if e, err := s.Lookup(ctx, "Sales", "email", cur.Value.Email, nil); err != nil || e.Value != cur.Value {
		t.Fatalf("the last version's email copy: %+v, %v", e, err)
	}
}
