package largeentity_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/testrig"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/patterns/largeentity"
	"github.com/tablekit/tablekit/patterns/table"
)

// New refuses what cannot work, before anything is sent.
func TestNewRejects(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	type badTag struct {
		Photo []byte `largeentity:"sometimes"`
	}
	type badKind struct {
		Age int `largeentity:"always"`
	}
	type reserved struct {
		TkBlobPhoto []byte
	}
	type reservedTk struct {
		Photo []byte `largeentity:"offload"`
		State string `table:"TkState"`
	}
	type keyTagged struct {
		PartitionKey string `largeentity:"offload"`
		RowKey       string
		Photo        []byte `largeentity:"offload"`
	}
	type unstorable struct {
		Photo []byte `largeentity:"offload"`
		C     chan int
	}
	type guid struct {
		ID string `table:",guid" largeentity:"offload"`
	}
	check := func(what string, err error) {
		t.Helper()
		invalid(t, what, err)
	}
	check("nil table", second(largeentity.New[Employee](nil, f.blobs, nil)))
	check("nil container", second(largeentity.New[Employee](f.tbl, nil, nil)))
	check("not a struct", second(largeentity.New[string](f.tbl, f.blobs, nil)))
	check("bad tag", second(largeentity.New[badTag](f.tbl, f.blobs, nil)))
	check("int field", second(largeentity.New[badKind](f.tbl, f.blobs, nil)))
	check("guid string", second(largeentity.New[guid](f.tbl, f.blobs, nil)))
	check("reserved name", second(largeentity.New[reserved](f.tbl, f.blobs, nil)))
	check("another reserved name", second(largeentity.New[reservedTk](f.tbl, f.blobs, nil)))
	check("a key tagged", second(largeentity.New[keyTagged](f.tbl, f.blobs, nil)))
	check("a type the table package refuses", second(largeentity.New[unstorable](f.tbl, f.blobs, nil)))
	check("Fields names a missing field", second(largeentity.New(f.tbl, f.blobs, &largeentity.Options[Employee]{Fields: []string{"Nope"}})))
	type none struct{ Name string }
	check("no field to offload", second(largeentity.New[none](f.tbl, f.blobs, nil)))
	check("Fields names an int", second(largeentity.New(f.tbl, f.blobs, &largeentity.Options[badKind]{Fields: []string{"Age"}})))
	for _, th := range []int{-1, table.Storage.MaxValueSize + 1} {
		check(fmt.Sprint("Threshold ", th), second(largeentity.New(f.tbl, f.blobs, &largeentity.Options[Employee]{Threshold: th})))
	}
	check("Concurrency -1", second(largeentity.New(f.tbl, f.blobs, &largeentity.Options[Employee]{Concurrency: -1})))
	check("Grace -1", second(largeentity.New(f.tbl, f.blobs, &largeentity.Options[Employee]{Grace: -time.Second})))
	for _, p := range []string{"a/", "/a", "a//b", "a?b", "a.", "a\x01", strings.Repeat("p", 513)} {
		check(fmt.Sprintf("Prefix %q", p), second(largeentity.New(f.tbl, f.blobs, &largeentity.Options[Employee]{Prefix: p})))
	}
	type plain struct {
		Photo []byte
	}
	if _, err := largeentity.New(f.tbl, f.blobs, &largeentity.Options[plain]{Fields: []string{"Photo"}, Prefix: "photos/v1"}); err != nil {
		t.Errorf("a field chosen by Options.Fields: %v", err)
	}
	if _, err := largeentity.New[Employee](f.tbl, f.blobs, nil); err != nil {
		t.Errorf("New with nil Options: %v", err)
	}
	if n := f.r.Faults.Count(); n != 0 {
		t.Fatalf("New sent %d requests", n)
	}
}

func second[A, B any](_ A, b B) B { return b }

// Writes and reads that cannot succeed fail before the network.
func TestLimitsSendNothing(t *testing.T) {
	testrig.StorageOnly(t, "Table Storage's 1 MiB entity and 64 KiB values; TestCosmosLargeEntity covers the Cosmos DB profile")
	t.Parallel()
	f := newFixture(t)
	s := newStore[Employee](t, f, nil)
	ctx := context.Background()
	type anything struct {
		PartitionKey, RowKey string
		Data                 any `table:",json" largeentity:"always"`
	}
	sa := newStore[anything](t, f, nil)
	type huge struct {
		PartitionKey, RowKey                              string
		A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q string // not offloaded: 17 x 64 KiB > 1 MiB
		Photo                                             []byte `largeentity:"always"`
	}
	sh := newStore[huge](t, f, nil)
	big := strings.Repeat("a", 32<<10)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	f.reset()
	for what, err := range map[string]error{
		"empty PartitionKey":  second(s.Insert(ctx, at("", "1", Employee{}))),
		"'/' in the RowKey":   second(s.Insert(ctx, at("Sales", "a/b", Employee{}))),
		"bad key in Get":      second(s.Get(ctx, "Sales", "a#b", nil)),
		"bad key in Delete":   s.Delete(ctx, "Sales\x01", "1", azcore.ETagAny),
		"bad key in Modify":   second(s.Modify(ctx, "", "1", func(*Employee) error { return nil })),
		"1,025-character key": second(s.Insert(ctx, at("Sales", strings.Repeat("k", 1025), Employee{}))),
	} {
		invalid(t, what, err, table.ErrInvalidKey)
	}
	invalid(t, "Update without an ETag", second(s.Update(ctx, at("Sales", "1", Employee{}), "")), table.ErrNoETag)
	invalid(t, "Delete without an ETag", s.Delete(ctx, "Sales", "1", ""), table.ErrNoETag)
	invalid(t, "a value JSON cannot encode", second(sa.Insert(ctx, anything{PartitionKey: "Sales", RowKey: "1", Data: func() {}})), table.ErrInvalidEntity)
	invalid(t, "an entity too large without its offloaded values", second(sh.Insert(ctx, huge{PartitionKey: "Sales", RowKey: "1", A: big, B: big, C: big, D: big, E: big, F: big, G: big, H: big, I: big, J: big, K: big, L: big, M: big, N: big, O: big, P: big, Q: big, Photo: []byte{1}})), table.ErrTooLarge)
	if _, err := s.Insert(cancelled, at("Sales", "1", Employee{Photo: photo(100<<10, 1)})); !errors.Is(err, context.Canceled) {
		t.Errorf("Insert with a cancelled context: %v", err)
	}
	if _, err := s.Get(cancelled, "Sales", "1", nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Get with a cancelled context: %v", err)
	}
	if err := s.Delete(cancelled, "Sales", "1", azcore.ETagAny); !errors.Is(err, context.Canceled) {
		t.Errorf("Delete with a cancelled context: %v", err)
	}
	if _, err := s.Sweep(cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("Sweep with a cancelled context: %v", err)
	}
	for _, err := range s.Range(cancelled, "Sales", "", "", nil) {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Range with a cancelled context: %v", err)
		}
	}
	for _, err := range s.Range(ctx, "", "", "", nil) {
		invalid(t, "Range of an empty PartitionKey", err, table.ErrInvalidKey)
	}
	if n := f.r.Faults.Count(); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}

// Values under the threshold stay inline until the entity would pass
// 1 MiB; then the largest go to blobs, only as many as needed.
func TestSpillWhenTheEntityWouldBeTooLarge(t *testing.T) {
	testrig.StorageOnly(t, "Table Storage's 1 MiB entity and 64 KiB values; TestCosmosLargeEntity covers the Cosmos DB profile")
	t.Parallel()
	f := newFixture(t)
	type album struct {
		P0, P1, P2, P3, P4, P5, P6, P7, P8, P9, P10, P11, P12, P13, P14, P15, P16, P17 []byte `largeentity:"offload"`
	}
	s := newStore(t, f, &largeentity.Options[album]{Threshold: table.Storage.MaxValueSize, Keys: func(*album) (string, string) { return "a", "1" }})
	ctx := context.Background()
	var a album
	sizes := []int{60, 60, 60, 61, 60, 60, 60, 60, 60, 60, 60, 60, 60, 60, 60, 60, 60, 64} // KiB: 18 values, 1,085 KiB in all
	fields := []*[]byte{&a.P0, &a.P1, &a.P2, &a.P3, &a.P4, &a.P5, &a.P6, &a.P7, &a.P8, &a.P9, &a.P10, &a.P11, &a.P12, &a.P13, &a.P14, &a.P15, &a.P16, &a.P17}
	for i, p := range fields {
		*p = photo(sizes[i]<<10, uint64(i))
	}
	f.reset()
	res, err := s.Insert(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Blobs) != 1 || res.Blobs[0].Property != "P17" {
		t.Fatalf("offloaded %+v, want only the largest value (P17, 64 KiB)", res.Blobs)
	}
	f.trips(t, "Insert", 1, 1)
	got, err := s.Get(ctx, "a", "1", nil)
	if err != nil {
		t.Fatal(err)
	}
	gf := []*[]byte{&got.Value.P0, &got.Value.P1, &got.Value.P2, &got.Value.P3, &got.Value.P4, &got.Value.P5, &got.Value.P6, &got.Value.P7, &got.Value.P8, &got.Value.P9, &got.Value.P10, &got.Value.P11, &got.Value.P12, &got.Value.P13, &got.Value.P14, &got.Value.P15, &got.Value.P16, &got.Value.P17}
	for i := range fields {
		if !bytes.Equal(*fields[i], *gf[i]) {
			t.Fatalf("P%d differs", i)
		}
	}
}

// A read resolves every pointer T has a field for, whatever the Store
// that wrote it chose: changing Fields or Threshold never hides values
// already stored.
func TestReadsWhatOtherConfigurationsWrote(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	w := newStore[Employee](t, f, nil)
	type plain struct {
		table.Meta
		Name  string
		Photo []byte
		CV    string
		Other map[string]any `table:",extra"`
	}
	r := newStore(t, f, &largeentity.Options[plain]{Fields: []string{"CV"}})
	ctx := context.Background()
	v := Employee{Name: "Jo", Photo: photo(50<<10, 1), CV: strings.Repeat("c", 20<<10), Skills: []string{"a"}}
	if _, err := w.Insert(ctx, at("Sales", "1", v)); err != nil {
		t.Fatal(err)
	}
	got, err := r.Get(ctx, "Sales", "1", nil)
	if err != nil || got.Value.Name != "Jo" || !bytes.Equal(got.Value.Photo, v.Photo) || got.Value.CV != v.CV {
		t.Fatalf("Get through another configuration = %+v, %v", got.Value.Name, err)
	}
	if len(got.Blobs) != 2 || got.Blobs[0].Property != "CV" || got.Blobs[1].Property != "Photo" {
		t.Fatalf("blobs %+v, want CV and Photo (T has no Skills field)", got.Blobs)
	}
	for name := range got.Value.Other {
		if strings.HasPrefix(name, largeentity.PointerPrefix) {
			t.Fatalf("the reserved pointer property %s reached T's extra map", name)
		}
	}
}

// A PageSize the service cannot give is ErrInvalid, with nothing sent.
func TestPageSizeLimits(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := newStore[Employee](t, f, nil)
	ctx := context.Background()
	f.reset()
	for _, n := range []int{-1, table.MaxPageSize + 1} {
		_, err := s.RangePage(ctx, "Sales", "", "", "", &largeentity.GetOptions{PageSize: n})
		if !errors.Is(err, largeentity.ErrInvalid) || !errors.Is(err, table.ErrInvalid) {
			t.Errorf("RangePage with PageSize %d: %v", n, err)
		}
		for _, err = range s.Range(ctx, "Sales", "", "", &largeentity.GetOptions{PageSize: n}) {
		}
		if !errors.Is(err, largeentity.ErrInvalid) {
			t.Errorf("Range with PageSize %d: %v", n, err)
		}
	}
	f.trips(t, "refused page sizes", 0, 0)
}
