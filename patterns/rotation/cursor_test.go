package rotation_test

import (
	"context"
	"testing"

	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/rotation"
	"github.com/tablekit/tablekit/patterns/table"
)

// TestCursorErrorsBounded: RangePage refuses a cursor of a MiB with
// ErrInvalid, in an error of at most 200 bytes, nothing sent.
func TestCursorErrorsBounded(t *testing.T) {
	t.Parallel()
	f := newFixture(t, jul30)
	r := f.tables(t, nil)
	f.env.CheckCursorsRefused(t, rotation.ErrInvalid, func(c table.Cursor) error {
		_, err := r.RangePage(context.Background(), jul30, aug1, c, nil)
		return err
	}, testrig.HugeCursors()...)
}
