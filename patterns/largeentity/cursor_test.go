package largeentity_test

import (
	"context"
	"testing"

	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/largeentity"
	"github.com/tablekit/tablekit/patterns/table"
)

// TestCursorErrorsBounded: RangePage refuses a cursor of a MiB with
// ErrInvalid, in an error of at most 200 bytes, nothing sent.
func TestCursorErrorsBounded(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := newStore[Employee](t, f, nil)
	f.r.CheckCursorsRefused(t, largeentity.ErrInvalid, func(c table.Cursor) error {
		_, err := s.RangePage(context.Background(), "Sales", "", "", c, nil)
		return err
	}, testrig.HugeCursors()...)
}
