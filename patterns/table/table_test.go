package table_test

import (
	"bytes"
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

func TestMain(m *testing.M) { tabletest.Main(m) }

type uuidLike [16]byte

type allTypes struct {
	table.Meta
	PartitionKey string
	RowKey       string
	S            string
	B            bool
	I8           int8
	I16          int16
	I32          int32
	U8           uint8
	U16          uint16
	U32          uint32
	I            int
	I64          int64
	F32          float32
	F64          float64
	T            time.Time
	Bin          []byte
	G            uuidLike
	GS           aztables.EDMGUID
	PS           *string
	PI64         *int64
	PT           *time.Time
	J            map[string][]int `table:",json"`
	Renamed      string           `table:"Other"`
	Skipped      string           `table:"-"`
	unexported   string
}

// newTable returns a Table[T] on a fresh table, and the transport its
// requests pass through (for counting round trips).
func newTable[T any](t *testing.T) (*table.Table[T], *faults.Transport) {
	t.Helper()
	env := tabletest.New(t)
	ft := &faults.Transport{}
	opts := table.ClientOptions() // retry.Default, as tablekit's clients use
	opts.Transport = ft
	tb, err := table.New[T](env.Table(opts), nil)
	if err != nil {
		t.Fatal(err)
	}
	ft.Reset()
	return tb, ft
}

func TestCodecRoundTripsEveryType(t *testing.T) {
	t.Parallel()
	tb, _ := newTable[allTypes](t)
	ctx := context.Background()
	s, i64 := "pointed", int64(math.MinInt64)
	pt := time.Date(2024, 5, 6, 7, 8, 9, 123456700, time.FixedZone("X", -5*3600))
	big := bytes.Repeat([]byte{0xab}, table.Storage.MaxValueSize)
	cases := []allTypes{
		{
			S: "héllo 'quoted' \"dq\" <&> \u2028 😀 \x01", B: true, I8: -128, I16: -32768, I32: math.MaxInt32,
			U8: 255, U16: 65535, U32: math.MaxUint32, I: math.MaxInt64, I64: math.MaxInt64,
			F32: 1.5, F64: 2, T: time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.FixedZone("+02", 7200)),
			Bin: []byte{0, 1, 2, 255}, G: uuidLike{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
			GS: "4185404a-5818-48c3-b9be-f217df0dba6f", PS: &s, PI64: &i64, PT: &pt,
			J: map[string][]int{"a": {1, 2}}, Renamed: "r", Skipped: "never stored", unexported: "x",
		},
		{I64: math.MinInt64, I32: math.MinInt32, F64: math.SmallestNonzeroFloat64, Bin: []byte{}},
		{F64: math.MaxFloat64, Bin: big, T: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)},
		{F64: math.Inf(1), F32: float32(math.Inf(-1))},
		{F64: math.NaN()},
		{F64: -0.0001, T: time.Date(9999, 12, 31, 23, 59, 59, 999999900, time.UTC)},
	}
	for i, in := range cases {
		in.PartitionKey, in.RowKey = "p", string(rune('a'+i))
		res, err := tb.Insert(ctx, in)
		if err != nil {
			t.Fatalf("case %d: Insert: %v", i, err)
		}
		got, err := value(tb.Get(ctx, "p", in.RowKey, nil))
		if err != nil {
			t.Fatalf("case %d: Get: %v", i, err)
		}
		if got.ETag != res.ETag || got.ETag == "" || got.Timestamp.IsZero() || got.Timestamp.Location() != time.UTC {
			t.Errorf("case %d: meta %+v, want ETag %q and a UTC Timestamp", i, got.Meta, res.ETag)
		}
		want := in
		want.Meta = got.Meta
		want.Skipped, want.unexported = "", ""
		want.T = in.T.UTC().Truncate(100)
		if in.PT != nil {
			pt := in.PT.UTC()
			want.PT = &pt
		}
		if in.Bin == nil {
			want.Bin = nil
		}
		if !equalAll(got, want) {
			t.Errorf("case %d: round trip\n got %+v\nwant %+v", i, got, want)
		}
	}
}

func equalAll(a, b allTypes) bool {
	f := func(x, y float64) bool { return x == y || (math.IsNaN(x) && math.IsNaN(y)) }
	eqPtr := func(x, y *string) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	eqTime := func(x, y *time.Time) bool { return (x == nil) == (y == nil) && (x == nil || x.Equal(*y)) }
	eqI := func(x, y *int64) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.Meta == b.Meta && a.PartitionKey == b.PartitionKey && a.RowKey == b.RowKey && a.S == b.S && a.B == b.B &&
		a.I8 == b.I8 && a.I16 == b.I16 && a.I32 == b.I32 && a.U8 == b.U8 && a.U16 == b.U16 && a.U32 == b.U32 &&
		a.I == b.I && a.I64 == b.I64 && f(float64(a.F32), float64(b.F32)) && f(a.F64, b.F64) && a.T.Equal(b.T) &&
		a.T.Location() == time.UTC && bytes.Equal(a.Bin, b.Bin) && a.G == b.G && strings.EqualFold(string(a.GS), string(b.GS)) &&
		eqPtr(a.PS, b.PS) && eqI(a.PI64, b.PI64) && eqTime(a.PT, b.PT) && len(a.J) == len(b.J) &&
		(a.J == nil || len(a.J["a"]) == len(b.J["a"])) && a.Renamed == b.Renamed && a.Skipped == "" && a.unexported == ""
}

type employee struct {
	table.Meta
	Department string `table:",pk"`
	ID         string `table:",rk"`
	FirstName  string
	LastName   string
	Age        int32
	Email      string `table:",omitempty"`
}

func TestPointOperationsAndConcurrency(t *testing.T) {
	t.Parallel()
	tb, ft := newTable[employee](t)
	ctx := context.Background()
	e := employee{Department: "Sales", ID: "000223", FirstName: "Jo", LastName: "Jones", Age: 29, Email: "jo@contoso.com"}
	r1, err := tb.Insert(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Insert(ctx, e); !errors.Is(err, table.ErrAlreadyExists) {
		t.Fatalf("second Insert = %v, want ErrAlreadyExists", err)
	}
	var re *azcore.ResponseError
	if _, err := tb.Insert(ctx, e); !errors.As(err, &re) || re.StatusCode != 409 {
		t.Fatalf("Insert error %v does not unwrap to the service's 409", err)
	}
	// Update with the current ETag succeeds; with the old one it fails.
	e.Age = 30
	r2, err := tb.Update(ctx, e, r1.ETag, table.Replace)
	if err != nil || r2.ETag == r1.ETag {
		t.Fatalf("Update = %+v, %v", r2, err)
	}
	if _, err := tb.Update(ctx, e, r1.ETag, table.Merge); !errors.Is(err, table.ErrPreconditionFailed) {
		t.Fatalf("Update with a stale ETag = %v, want ErrPreconditionFailed", err)
	}
	if _, err := tb.Update(ctx, e, "", table.Merge); !errors.Is(err, table.ErrNoETag) {
		t.Fatalf("Update without ETag = %v, want ErrNoETag", err)
	}
	if err := tb.Delete(ctx, "Sales", "000223", ""); !errors.Is(err, table.ErrNoETag) {
		t.Fatalf("Delete without ETag = %v, want ErrNoETag", err)
	}
	// Merge keeps properties not sent; Replace drops them.
	partial := employee{Department: "Sales", ID: "000223", FirstName: "Joanna", Age: 31}
	if _, err := tb.Update(ctx, partial, azcore.ETagAny, table.Merge); err != nil {
		t.Fatal(err)
	}
	got, _ := value(tb.Get(ctx, "Sales", "000223", nil))
	if got.FirstName != "Joanna" || got.Email != "jo@contoso.com" || got.LastName != "" {
		// LastName "" was sent (no omitempty), so Merge overwrote it with "".
		t.Fatalf("after Merge: %+v", got)
	}
	if _, err := tb.Update(ctx, partial, got.ETag, table.Replace); err != nil {
		t.Fatal(err)
	}
	got, _ = value(tb.Get(ctx, "Sales", "000223", nil))
	if got.Email != "" {
		t.Fatalf("after Replace the omitted Email must be gone: %+v", got)
	}
	// Projection: only the selected property is transferred.
	proj, err := value(tb.Get(ctx, "Sales", "000223", &table.GetOptions{Select: []string{"Age"}}))
	if err != nil || proj.Age != 31 || proj.FirstName != "" || proj.ID != "000223" || proj.ETag == "" || proj.Timestamp.IsZero() {
		t.Fatalf("projected Get = %+v, %v; want only Age, the keys, ETag and Timestamp", proj, err)
	}
	// Upsert creates and replaces.
	if _, err := tb.Upsert(ctx, employee{Department: "Sales", ID: "000300", FirstName: "New"}, table.Replace); err != nil {
		t.Fatal(err)
	}
	// Delete with a stale ETag fails, with the current one succeeds.
	if err := tb.Delete(ctx, "Sales", "000223", r1.ETag); !errors.Is(err, table.ErrPreconditionFailed) {
		t.Fatalf("Delete with a stale ETag = %v", err)
	}
	ft.Reset()
	if err := tb.Delete(ctx, "Sales", "000223", got.ETag); err != nil {
		t.Fatal(err)
	}
	if n := ft.Count(); n != 1 {
		t.Fatalf("Delete took %d round trips, want 1", n)
	}
	if _, err := tb.Get(ctx, "Sales", "000223", nil); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("Get after Delete = %v, want ErrNotFound", err)
	}
	if err := tb.Delete(ctx, "Sales", "000223", azcore.ETagAny); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("Delete of a missing entity = %v, want ErrNotFound", err)
	}
	if _, err := tb.Get(ctx, "Sales", "nope", &table.GetOptions{Select: []string{"Age"}}); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("projected Get of a missing entity = %v, want ErrNotFound", err)
	}
}

// The zero time.Time is not a storable Edm.DateTime: it is written as no
// property and reads back as the zero time.
func TestZeroTimeIsNoProperty(t *testing.T) {
	t.Parallel()
	tb, _ := newTable[allTypes](t)
	ctx := context.Background()
	if _, err := tb.Insert(ctx, allTypes{PartitionKey: "p", RowKey: "z"}); err != nil {
		t.Fatal(err)
	}
	dyn, _ := table.New[table.Dynamic](tb.Client(), nil)
	d, err := value(dyn.Get(ctx, "p", "z", nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, stored := d.Properties["T"]; stored {
		t.Fatalf("the zero time was stored as %v", d.Properties["T"])
	}
	got, err := value(tb.Get(ctx, "p", "z", nil))
	if err != nil || !got.T.IsZero() {
		t.Fatalf("read back %v, %v; want the zero time", got.T, err)
	}
}

// The cost table of the package documentation, asserted.
func TestRoundTripsPerOperation(t *testing.T) {
	t.Parallel()
	tb, ft := newTable[employee](t)
	ctx := context.Background()
	e := employee{Department: "Sales", ID: "000001", FirstName: "A"}
	steps := []struct {
		name string
		do   func() error
	}{
		{"Insert", func() error { _, err := tb.Insert(ctx, e); return err }},
		{"Get", func() error { _, err := tb.Get(ctx, "Sales", "000001", nil); return err }},
		{"Get with Select", func() error {
			_, err := tb.Get(ctx, "Sales", "000001", &table.GetOptions{Select: []string{"FirstName"}})
			return err
		}},
		{"Update", func() error { _, err := tb.Update(ctx, e, azcore.ETagAny, table.Merge); return err }},
		{"Upsert", func() error { _, err := tb.Upsert(ctx, e, table.Replace); return err }},
		{"QueryPage", func() error {
			_, err := tb.QueryPage(ctx, &table.Query{Filter: table.PartitionKey("Sales")})
			return err
		}},
		{"Submit of 3 ops", func() error {
			_, err := tb.Submit(ctx, []table.Op{tb.InsertOp(employee{Department: "Sales", ID: "2"}), tb.InsertOp(employee{Department: "Sales", ID: "3"}), tb.DeleteOp("Sales", "000001", azcore.ETagAny)}, nil)
			return err
		}},
		{"Delete", func() error { return tb.Delete(ctx, "Sales", "2", azcore.ETagAny) }},
	}
	for _, s := range steps {
		ft.Reset()
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if n := ft.Count(); n != 1 {
			t.Errorf("%s took %d round trips, want 1", s.name, n)
		}
	}
}

// value drops a read's envelope, for tests that look at the value only.
func value[T any](e table.Entity[T], err error) (T, error) { return e.Value, err }
