package encryption

import (
	"context"

	"github.com/tablekit/tablekit/patterns/table"
)

// Encrypt and Decrypt expose the codec path for benchmarks: v as the
// entity stored, and back.
func (t *Table[T]) Encrypt(ctx context.Context, v T) (table.Dynamic, error) {
	d, _, err := t.encrypt(ctx, "bench", &v, table.Mode{})
	return d, err
}

func (t *Table[T]) Decrypt(ctx context.Context, d table.Dynamic) (T, error) {
	return t.decrypt(ctx, "bench", d)
}

// BlindValue exposes the blind value of a lookup, for tests of the index.
func (t *Table[T]) BlindValue(field string, value any) (string, error) {
	return t.blindValue(field, value)
}
