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
	g, err := encryption.New[guidy](r.tbl, keys, []string{"G"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Insert(ctx, guidy{PartitionKey: "p", RowKey: "g", G: "SECRET-not-a-guid"})
	check(t, "insert guid", err, table.ErrInvalidEntity, "G", "SECRET")

	// Decrypting: a value that does not fit the field it is read into.
	dyn, err := encryption.New[table.Dynamic](r.tbl, keys, []string{"Small"}, &encryption.Options{Indexes: []encryption.Index{{Field: "Small"}}, IndexKey: key("i")})
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
	s, err := encryption.New[small](r.tbl, keys, []string{"Small"}, &encryption.Options{Indexes: []encryption.Index{{Field: "Small"}}, IndexKey: key("i")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Get(ctx, "p", "s", nil)
	check(t, "get", err, table.ErrInvalidEntity, "Small", "31337")
	for _, err := range s.Query(ctx, nil) {
		check(t, "query", err, table.ErrInvalidEntity, "Small", "31337")
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

// New needs a table, a KeyProvider and the fields to encrypt; nil Options
// are the defaults (no blind index, the table's own name bound in).
func TestNewNilOptions(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	p, err := encryption.New[Person](r.tbl, keysOf(t, "k1", "k1"), []string{"SSN"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := alice()
	if _, err := p.Insert(ctx, a); err != nil {
		t.Fatal(err)
	}
	got, err := p.Get(ctx, a.PartitionKey, a.RowKey, nil)
	if err != nil || got.Value.SSN != a.SSN || got.Value.Email != a.Email {
		t.Fatalf("%+v, %v", got.Value, err)
	}
	stored := r.rawEntity(t, a.PartitionKey, a.RowKey)
	if stored["SSN@odata.type"] != "Edm.Binary" || stored["Email"] != a.Email {
		t.Errorf("stored %v", stored["raw"])
	}
	if _, err := p.Where("SSN", a.SSN); !errors.Is(err, encryption.ErrInvalid) {
		t.Errorf("Where without indexes: %v", err)
	}
}
