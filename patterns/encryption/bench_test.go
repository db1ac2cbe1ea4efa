package encryption_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/encryption"
	"github.com/tablekit/tablekit/patterns/table"
)

// The benchmarks measure what encryption adds to an entity of 8
// properties with 2 encrypted (Email with a blind index, SSN):
//
//   - BenchmarkEncryptedCodec, no network: one encode and one decode of the entity.
//     "plain" is table.ToDynamic + table.FromDynamic, the conversion
//     every pattern over Table[Dynamic] pays; "encrypted" is the same
//     conversion plus the AES-GCM seal and open of 2 values, and
//     "encrypted+index" adds the HMAC of the blind index.
//   - BenchmarkEncryptedPointOps, against the emulator: an Insert then a Get
//     through a table.Table[T] and through an encryption.Table[T] on the
//     same table, alternating which goes first, each side's time and
//     round trips reported apart.

type benchEmployee struct {
	table.Meta
	Department string `table:",pk"`
	ID         string `table:",rk"`
	FirstName  string
	LastName   string
	Email      string
	SSN        string
	Age        int64
	Hired      time.Time
	Salary     float64
	Active     bool
}

func benchValue(i int) benchEmployee {
	return benchEmployee{Department: "Sales", ID: fmt.Sprintf("%06d", i), FirstName: "Jo", LastName: "Jones",
		Email: "jo.jones@contoso.com", SSN: "123-45-6789", Age: 42, Hired: time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC), Salary: 51234.5, Active: true}
}

func benchTable(b *testing.B, tbl *table.Table[table.Dynamic], index bool) *encryption.Table[benchEmployee] {
	keys, err := encryption.NewStaticKeys("k1", map[string][]byte{"k1": key("k1")})
	if err != nil {
		b.Fatal(err)
	}
	var o *encryption.Options
	if index {
		o = &encryption.Options{Indexes: []encryption.Index{{Field: "Email", Normalize: encryption.TrimLower}}, IndexKey: key("index")}
	}
	e, err := encryption.New[benchEmployee](tbl, keys, []string{"Email", "SSN"}, o)
	if err != nil {
		b.Fatal(err)
	}
	return e
}

func BenchmarkEncryptedCodec(b *testing.B) {
	ctx := context.Background()
	v := benchValue(1)
	// A Table over a client that is never called: no network.
	c, err := aztables.NewClientWithNoCredential("http://127.0.0.1:1/devstoreaccount1/bench", nil)
	if err != nil {
		b.Fatal(err)
	}
	tbl, err := table.New[table.Dynamic](c, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("plain", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			d, err := table.ToDynamic(v)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := table.FromDynamic[benchEmployee](d); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, index := range []bool{false, true} {
		name := "encrypted"
		if index {
			name += "+index"
		}
		e := benchTable(b, tbl, index)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				d, err := e.Encrypt(ctx, v)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := e.Decrypt(ctx, d); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkEncryptedPointOps(b *testing.B) {
	r := testrig.New(b)
	ft := r.Faults // counts the requests; injects nothing
	c := r.Table()
	plain, err := table.New[benchEmployee](c, nil)
	if err != nil {
		b.Fatal(err)
	}
	dyn, err := table.New[table.Dynamic](c, nil)
	if err != nil {
		b.Fatal(err)
	}
	enc := benchTable(b, dyn, true)
	ctx := context.Background()
	n := 0
	// Each iteration makes an Insert then a Get through both sides, in
	// alternating order (so the emulator's drift and warm-up affect both
	// alike), and reports each side's time and round trips per operation.
	sides := [2]struct {
		name   string
		insert func(benchEmployee) error
		get    func(string) error
	}{
		{"table", func(v benchEmployee) error { _, err := plain.Insert(ctx, v); return err },
			func(id string) error { _, err := plain.Get(ctx, "Sales", id, nil); return err }},
		{"encryption", func(v benchEmployee) error { _, err := enc.Insert(ctx, v); return err },
			func(id string) error { _, err := enc.Get(ctx, "Sales", id, nil); return err }},
	}
	var took [2]time.Duration
	var trips [2]int
	ft.Reset()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		for k := range 2 {
			side := k ^ (i & 1)
			n++
			v := benchValue(n)
			before, start := ft.Count(), time.Now()
			if err := sides[side].insert(v); err != nil {
				b.Fatal(err)
			}
			if err := sides[side].get(v.ID); err != nil {
				b.Fatal(err)
			}
			took[side] += time.Since(start)
			trips[side] += ft.Count() - before
		}
	}
	for k, side := range sides {
		b.ReportMetric(float64(took[k].Microseconds())/float64(b.N), side.name+"-us/op")
		b.ReportMetric(float64(trips[k])/float64(b.N), side.name+"-roundtrips/op")
	}
}
