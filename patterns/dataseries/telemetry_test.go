package dataseries_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/dataseries"
	"github.com/tablekit/tablekit/patterns/table"
)

// TestRetriedConflictLogsAtDebug: an Add whose merge met another writer's
// change (412), re-read and succeeded logs its record at debug, its retry
// counted; warnings are for an Add that gave up after its retries.
func TestRetriedConflictLogsAtDebug(t *testing.T) {
	t.Parallel()
	r := testrig.New(t)
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s, err := dataseries.New[int64](testrig.NewTable[table.Dynamic](t, r.Table()), dataseries.Hours(), &dataseries.Options{Retry: &testrig.Fast, Telemetry: &table.Telemetry{Logger: logger}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.Set(ctx, "p", "r", "H01", 1); err != nil {
		t.Fatal(err)
	}
	conflict := faults.Fault{Match: faults.IsMerge, Status: http.StatusPreconditionFailed, ErrorCode: "UpdateConditionNotSatisfied"}
	logs.Reset()
	r.Faults.Inject(conflict)
	if e, err := s.Add(ctx, "p", "r", "H01", 1); err != nil || e.Value != 2 {
		t.Fatalf("Add = %+v, %v", e, err)
	}
	if got := logs.String(); !strings.HasPrefix(got, "time=") || !strings.Contains(got, "level=DEBUG msg=dataseries.Add") || !strings.Contains(got, "tablekit.retries=1 tablekit.outcome=applied") || strings.Contains(got, "level=WARN") {
		t.Fatalf("a retried, successful Add logged:\n%s", got)
	}
	logs.Reset()
	for range testrig.Fast.MaxRetries + 1 {
		r.Faults.Inject(conflict)
	}
	if _, err := s.Add(ctx, "p", "r", "H01", 1); !errors.Is(err, table.ErrPreconditionFailed) {
		t.Fatalf("Add against a conflict on every attempt: %v", err)
	}
	if got := logs.String(); !strings.Contains(got, "level=WARN msg=dataseries.Add") || !strings.Contains(got, "tablekit.outcome=not_applied") {
		t.Fatalf("an Add that gave up logged:\n%s", got)
	}
}
