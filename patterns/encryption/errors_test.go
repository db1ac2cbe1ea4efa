package encryption_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tablekit/tablekit/patterns/encryption"
	"github.com/tablekit/tablekit/patterns/table"
)

// The core's errors may quote a value (an invalid GUID, a time out of
// range, an integer that does not fit); this package's never do, and still
// match the core's sentinels.
func TestErrorsCarryNoPlaintext(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	keys := keysOf(t, "k1", "k1")
	check := func(t *testing.T, what string, err error, want error, prop string, secrets ...string) {
		t.Helper()
		var e *encryption.Error
		if !errors.Is(err, want) || !errors.As(err, &e) || e.Property != prop {
			t.Fatalf("%s: %v (%#v), want %v naming %s", what, err, e, want, prop)
		}
		noPlaintext(t, err.Error(), secrets...)
	}

	// Encrypting: a time out of range, a string that is not a GUID.
	p := people(t, r, keys)
	a := alice()
	a.Born = time.Date(1500, 7, 4, 0, 0, 0, 0, time.UTC)
	_, err := p.Insert(ctx, a)
	check(t, "insert", err, table.ErrInvalidEntity, "Born", "1500")
	type guidy struct {
		PartitionKey, RowKey string
		G                    string `table:",guid"`
	}
	g, err := encryption.New[guidy](r.tbl, &encryption.Options{Fields: []string{"G"}, Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Insert(ctx, guidy{PartitionKey: "p", RowKey: "g", G: "SECRET-not-a-guid"})
	check(t, "insert guid", err, table.ErrInvalidEntity, "G", "SECRET")

	// Decrypting: a value that does not fit the field it is read into.
	dyn, err := encryption.New[table.Dynamic](r.tbl, &encryption.Options{Fields: []string{"Small"}, Keys: keys, Indexes: []encryption.Index{{Field: "Small"}}, IndexKey: key("i")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Insert(ctx, table.Dynamic{PartitionKey: "p", RowKey: "s", Properties: map[string]any{"Small": int32(31337)}}); err != nil {
		t.Fatal(err)
	}
	type small struct {
		PartitionKey, RowKey string
		Small                int8
	}
	s, err := encryption.New[small](r.tbl, &encryption.Options{Fields: []string{"Small"}, Keys: keys, Indexes: []encryption.Index{{Field: "Small"}}, IndexKey: key("i")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Get(ctx, "p", "s", nil)
	check(t, "get", err, table.ErrInvalidEntity, "Small", "31337")
	for _, err := range s.Lookup(ctx, "Small", 31337, table.Filter{}) {
		check(t, "lookup", err, table.ErrInvalidEntity, "Small", "31337")
	}

	// A blind value of a value that cannot be stored.
	_, err = dyn.BlindValue("Small", time.Date(1500, 7, 4, 0, 0, 0, 0, time.UTC))
	check(t, "blind value", err, table.ErrInvalidEntity, "Small", "1500")

	// An Error without a cause or operation still describes itself.
	if got := (&encryption.Error{}).Error(); got == "" {
		t.Error("empty message")
	}
	if got := (&encryption.Error{Op: "get", Err: encryption.ErrDecrypt}).Error(); got != "encryption: get: "+encryption.ErrDecrypt.Error()[len("encryption: "):] {
		t.Errorf("message %q", got)
	}
}
