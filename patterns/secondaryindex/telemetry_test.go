package secondaryindex_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/secondaryindex"
	"github.com/tablekit/tablekit/patterns/table"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestTelemetrySpans: the Store's operations, the composing and paging
// ones included, are spans named secondaryindex.<Verb> with the table, the
// partition (never a RowKey), the round trips they used and, for writes,
// the outcome: a lost response settled by a read is "verified"; an
// ...Ops, which writes nothing itself, has no outcome; an operation
// refused before the network used no round trip. Each is a root span
// here (the test starts no span of its own).
func TestTelemetrySpans(t *testing.T) {
	t.Parallel()
	r := testrig.New(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	c := r.Table()
	tbl := testrig.NewTable[table.Dynamic](t, c)
	s, err := secondaryindex.New(tbl, &secondaryindex.Options[Person]{Primary: "empid", Indexes: personIndexes(), Retry: &testrig.Fast, Telemetry: &table.Telemetry{TracerProvider: tp}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r.Faults.Inject(faults.Fault{Match: func(q *http.Request) bool { return q.Method == http.MethodPost }, LoseResponse: true})
	if _, err := s.Insert(ctx, Person{Department: "Sales", ID: "000001", FirstName: "Ann", LastName: "Jones", Email: "ann@x"}); err != nil {
		t.Fatal(err)
	}
	ch, err := s.InsertOps(ctx, Person{Department: "Sales", ID: "000002", FirstName: "Bo", LastName: "Jones", Email: "bo@x"})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := table.New[table.Dynamic](c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Apply(ctx, ch); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ListPage(ctx, "Sales", "", &secondaryindex.ListOptions{PageSize: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RangePage(ctx, "Sales", "name", []any{"Jones"}, []any{"Jones"}, "", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "Sa/les", "000003"); !errors.Is(err, table.ErrInvalid) {
		t.Fatalf("Get of an invalid key: %v", err)
	}
	tp.ForceFlush(ctx)
	attrs := func(sp sdktrace.ReadOnlySpan) map[attribute.Key]string {
		m := map[attribute.Key]string{}
		for _, kv := range sp.Attributes() {
			m[kv.Key] = kv.Value.Emit()
		}
		return m
	}
	want := []struct {
		name, trips, outcome, partition string
	}{
		// The lost batch, its resend (409) and the read that settled it.
		{"secondaryindex.Insert", "3", "verified", "Sales"},
		{"secondaryindex.InsertOps", "", "", "Sales"}, // no round trip: no attribute
		{"secondaryindex.ListPage", "1", "", "Sales"},
		// The copies' page and a fetch of each KeysOnly copy's primary.
		{"secondaryindex.RangePage", "3", "", "Sales"},
		{"secondaryindex.Get", "", "", "Sa/les"},
	}
	var got []sdktrace.ReadOnlySpan
	for _, sp := range rec.Ended() {
		// The operations called here, not the fetches of a KeysOnly
		// range's primaries (secondaryindex.Get spans, its children).
		if !sp.Parent().IsValid() {
			got = append(got, sp)
		}
	}
	if len(got) != len(want) {
		names := make([]string, len(got))
		for i, sp := range got {
			names[i] = sp.Name()
		}
		t.Fatalf("spans %q, want %d", names, len(want))
	}
	for i, w := range want {
		a := attrs(got[i])
		if got[i].Name() != w.name || a["tablekit.table"] != tbl.Name() || a["tablekit.round_trips"] != w.trips || a["tablekit.outcome"] != w.outcome {
			t.Errorf("span %d: %s %v, want %s with %s round trips, outcome %q", i, got[i].Name(), a, w.name, w.trips, w.outcome)
		}
		if p := a["tablekit.partition"]; p != w.partition {
			t.Errorf("%s: partition %q, want %q", w.name, p, w.partition)
		}
		for _, kv := range got[i].Attributes() {
			if v := kv.Value.Emit(); v == "000001" || v == "000002" || v == "000003" {
				t.Errorf("%s: attribute %s holds a RowKey", w.name, kv.Key)
			}
		}
	}
}
