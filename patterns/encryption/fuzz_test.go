package encryption

import (
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
		b, err := seal(aead, "k1", w, v, table.Storage.MaxValueSize)
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
