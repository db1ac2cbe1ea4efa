package logtail_test

import (
	"context"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/logtail"
	"github.com/tablekit/tablekit/patterns/table"
)

// TestCursorErrorsBounded: RangePage refuses a cursor of a MiB with
// ErrInvalid, in an error of at most 200 bytes, nothing sent.
func TestCursorErrorsBounded(t *testing.T) {
	t.Parallel()
	r := testrig.New(t)
	l, err := logtail.New(testrig.NewTable[login](t, r.Table()), &logtail.Options{Buckets: 3})
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2024, 7, 31, 18, 0, 0, 0, time.UTC)
	r.CheckCursorsRefused(t, logtail.ErrInvalid, func(c table.Cursor) error {
		_, err := l.RangePage(context.Background(), "u", from, from.Add(time.Hour), c, &logtail.RangeOptions{PageSize: 3})
		return err
	}, testrig.HugeCursors()...)
}
