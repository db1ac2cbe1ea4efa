// Package keycursor encodes the cursors of the pattern packages' paged
// listings that merge several queries by key (logtail's buckets,
// buckets' partitions, rotation's periods): the keys of the last entity a
// page returned and a fingerprint of the listing, as a [table.Cursor],
// so a listing resumes after those keys in any process, and a cursor
// given to another listing is refused.
package keycursor

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"

	"github.com/tablekit/tablekit/patterns/table"
)

const version = "k1"

// ErrForeign is Parse's error for a cursor that is not one of this
// listing's (malformed, or of another listing).
var ErrForeign = errors.New("not a cursor of this listing")

// Fingerprint identifies a listing by the parts that define it.
func Fingerprint(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:9])
}

// Make is the cursor of the listing fp after the entity with keys last.
func Make(fp string, last ...string) table.Cursor {
	parts := []string{version, fp}
	for _, k := range last {
		parts = append(parts, base64.RawURLEncoding.EncodeToString([]byte(k)))
	}
	return table.Cursor(strings.Join(parts, "."))
}

// Parse returns the n keys of cursor c of the listing fp, or ErrForeign.
func Parse(c table.Cursor, fp string, n int) ([]string, error) {
	parts := strings.Split(string(c), ".")
	if len(parts) != n+2 || parts[0] != version || parts[1] != fp {
		return nil, ErrForeign
	}
	out := make([]string, n)
	for i, p := range parts[2:] {
		k, err := base64.RawURLEncoding.DecodeString(p)
		if err != nil {
			return nil, ErrForeign
		}
		out[i] = string(k)
	}
	return out, nil
}
