package encryption

import (
	"slices"
	"testing"
	"time"

	"github.com/tablekit/tablekit/patterns/table"
)

// FuzzOpen feeds arbitrary stored bytes to the parsers of the stored
// format: they must fail cleanly (never panic), and a value that opens
// must be one of the types a Dynamic holds. go test runs the seeds.
func FuzzOpen(f *testing.F) {
	key := make([]byte, 32)
	aead, err := newAEAD(key)
	if err != nil {
		f.Fatal(err)
	}
	w := binding{"t", "p", "r", "F"}
	for _, v := range []any{"secret", int32(-1), int64(1 << 40), 2.5, true, time.Unix(0, 100).UTC(), []byte{0, 1}} {
		b, err := seal(aead, "k1", w, v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)-1])
	}
	f.Add([]byte{})
	f.Add([]byte{1})
	f.Add([]byte{1, 0})
	f.Add([]byte{1, 255, 'k'})
	f.Add(append([]byte{1, 3, 'a', ' ', 'b'}, make([]byte, 44)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		parseTyped(b)
		id, n, ok := header(b)
		if !ok {
			return
		}
		if validKeyID(id) != nil {
			t.Fatalf("header accepted key id %q", id)
		}
		v, err := open(aead, b, n, w)
		if err != nil {
			return
		}
		if _, err := appendTyped(nil, v); err != nil {
			t.Fatalf("opened a %T", v)
		}
	})
}

// FuzzFilterProperties: the properties read from the text of a filter the
// table package builds are exactly the ones it compares, whatever the
// values (quotes, keywords, property names inside strings), and no input
// panics. go test runs the seeds.
func FuzzFilterProperties(f *testing.F) {
	for _, s := range []string{"", "x", "it's", "''", "SSN eq 'x'", "Émile", "' or SSN eq '", "X'01'"} {
		f.Add(s, int64(-5))
	}
	f.Fuzz(func(t *testing.T, s string, n int64) {
		filterProperties(s) // any text: no panic
		flt := table.And(table.Eq("Name", s), table.Not(table.Or(table.Lt("Åge_2", n), table.Eq("Photo", []byte(s)))),
			table.Ge("Born", time.Unix(n%1e10, 0)), table.Ne("OK", n > 0), table.Eq("Score", float64(n)/3))
		if flt.Err() != nil {
			return
		}
		got, ok := filterProperties(flt.String())
		if !ok {
			t.Fatalf("%q: unreadable", flt.String())
		}
		var props []string
		for _, name := range got {
			if !slices.Contains([]string{"and", "or", "not", "eq", "ne", "lt", "ge", "true", "false"}, name) {
				props = append(props, name)
			}
		}
		if want := []string{"Name", "Åge_2", "Photo", "Born", "OK", "Score"}; !slices.Equal(props, want) {
			t.Fatalf("%q: properties %q, want %q", flt.String(), props, want)
		}
	})
}
