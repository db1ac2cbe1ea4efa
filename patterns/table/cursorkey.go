package table

import (
	"fmt"

	"github.com/tablekit/tablekit/internal/cursorseal"
)

// CursorKey seals cursors (see Cursor): with it, a cursor is encrypted and
// authenticated (AES-256-GCM) and bound to its listing, so that whoever
// holds one (an end user of a web API that hands cursors out) can read
// nothing from it, neither keys nor indexed values, and cannot alter it:
// any changed, removed or added character, and a cursor of another
// listing or table, is ErrInvalidFilter (ErrInvalid) before the network.
// A sealed cursor resumes in any process whose table has a CursorKey made
// from the same secret. Make one per application, from a secret kept as
// carefully as its storage credentials, and give it to every table with
// Options.CursorKey (and to the packages that take no table, such as
// rotation, in their Options): the pattern packages seal the cursors of
// their listings with their table's key. It is immutable and safe for
// concurrent use.
type CursorKey struct {
	k *cursorseal.Key
}

// NewCursorKey returns the CursorKey of secret: at least 32 random bytes, such as those of crypto/rand, kept secret (the
// application's configuration or key vault). older are earlier secrets:
// cursors sealed with them still open, while new cursors are sealed with
// secret, so a secret is rotated without breaking the cursors users hold
// (drop an older secret once its cursors have expired). A shorter secret
// is ErrInvalid (the error names it by position and length only). The
// secrets are copied.
func NewCursorKey(secret []byte, older ...[]byte) (*CursorKey, error) {
	k, err := cursorseal.New(append([][]byte{secret}, older...)...)
	if err != nil {
		return nil, fmt.Errorf("table.NewCursorKey: %w: %v", ErrInvalid, err)
	}
	return &CursorKey{k}, nil
}

// withCursorKey returns a view of the table whose cursors (Page.Next,
// Query.Cursor, and the cursors of the pattern packages built over the
// view) are sealed with k, nil for plain ones (internal/keycursor.Sealed).
func (t *Table[T]) withCursorKey(k *CursorKey) any {
	c := *t
	c.cursorKey = k
	return &c
}

// cursorKeyOf returns the key that seals the table's cursors, nil when
// they are plain (internal/keycursor.KeyOf).
func (t *Table[T]) cursorKeyOf() any { return t.cursorKey }

// sealable is a *Table[T] of any T, for internal/cursorseal.
type sealable interface {
	withCursorKey(k *CursorKey) any
	cursorKeyOf() any
}

func init() {
	cursorseal.Register(func(v any) *cursorseal.Key {
		if k := v.(*CursorKey); k != nil {
			return k.k
		}
		return nil
	})
	cursorseal.RegisterTables(
		func(t any) any { return t.(sealable).cursorKeyOf() },
		func(t, k any) any { key, _ := k.(*CursorKey); return t.(sealable).withCursorKey(key) },
	)
}

// listing is what t's cursors of the query with fingerprint fp are
// sealed for: the table and the query.
func (t *Table[T]) listing(fp string) string {
	return "table\x00" + t.name + "\x00" + fp
}

// cursorOf returns the cursor of p, sealed when t has a CursorKey.
func (t *Table[T]) cursorOf(p position) Cursor {
	c := p.cursor()
	if c == "" || t.cursorKey == nil {
		return c
	}
	return Cursor(t.cursorKey.k.Seal(t.listing(p.fp), string(c)))
}

// positionOf decodes cursor c of the query with fingerprint fp, opening it
// first when t has a CursorKey.
func (t *Table[T]) positionOf(c Cursor, fp string) (position, error) {
	plain := c
	if c != "" && t.cursorKey != nil {
		s, ok := t.cursorKey.k.Open(t.listing(fp), string(c))
		if !ok {
			return position{}, fmt.Errorf("%w: cursor %s is not a sealed cursor of this query", ErrInvalidFilter, cursorseal.Quote(string(c)))
		}
		plain = Cursor(s)
	}
	p, ok := plain.position()
	if !ok {
		return p, fmt.Errorf("%w: malformed cursor %s", ErrInvalidFilter, cursorseal.Quote(string(c)))
	}
	if p.fp != "" && p.fp != fp {
		return p, fmt.Errorf("%w: cursor %s belongs to a query with another Filter or Select", ErrInvalidFilter, cursorseal.Quote(string(c)))
	}
	p.fp = fp
	return p, nil
}
