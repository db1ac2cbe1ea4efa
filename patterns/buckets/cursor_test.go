package buckets_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/buckets"
	"github.com/tablekit/tablekit/patterns/table"
)

// TestCursorErrorsBounded: RangePage refuses a cursor of a MiB, and one
// of a range whose bounds are a MiB long, with ErrInvalid, in an error of
// at most 200 bytes, nothing sent.
func TestCursorErrorsBounded(t *testing.T) {
	t.Parallel()
	r := testrig.New(t)
	tb, _ := newTableOn(t, r)
	s := newSpread(t, tb, &buckets.Options{Buckets: 4})
	ctx := context.Background()
	r.CheckCursorsRefused(t, buckets.ErrInvalid, func(c table.Cursor) error {
		_, err := s.RangePage(ctx, "h", "", "", c, &buckets.RangeOptions{PageSize: 3})
		return err
	}, testrig.HugeCursors()...)
	long := strings.Repeat("x", 1<<20)
	r.CheckCursorsRefused(t, buckets.ErrInvalid, func(c table.Cursor) error {
		_, err := s.RangePage(ctx, "h", long, long+"y", c, &buckets.RangeOptions{PageSize: 3})
		return err
	}, "k1.x.eA")
}
