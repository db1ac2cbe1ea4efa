package secondaryindex_test

import (
	"context"
	"testing"

	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/secondaryindex"
	"github.com/tablekit/tablekit/patterns/table"
)

// TestCursorErrorsBounded: ListPage and RangePage refuse a cursor of a
// MiB with ErrInvalid, in an error of at most 200 bytes (which spans and
// logs carry too), nothing sent.
func TestCursorErrorsBounded(t *testing.T) {
	t.Parallel()
	r := newRig(t, intraIndexes(), false)
	ctx := context.Background()
	r.CheckCursorsRefused(t, secondaryindex.ErrInvalid, func(c table.Cursor) error {
		_, err := r.store.ListPage(ctx, "Sales", c, nil)
		return err
	}, testrig.HugeCursors()...)
	r.CheckCursorsRefused(t, secondaryindex.ErrInvalid, func(c table.Cursor) error {
		_, err := r.store.RangePage(ctx, "Sales", "email", "a", "z", c, nil)
		return err
	}, testrig.HugeCursors()...)
}
