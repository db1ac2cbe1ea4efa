package table_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/table"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

type traced struct {
	PartitionKey, RowKey string
	N                    int
}

// spanTree renders the ended spans under root as an indented tree of
// names, children in start order, with the attributes named in show.
func spanTree(spans []sdktrace.ReadOnlySpan, root trace.SpanID, show ...attribute.Key) string {
	var b strings.Builder
	var walk func(parent trace.SpanID, depth int)
	walk = func(parent trace.SpanID, depth int) {
		for _, s := range spans {
			if s.Parent().SpanID() != parent {
				continue
			}
			fmt.Fprintf(&b, "%s%s", strings.Repeat("  ", depth), s.Name())
			for _, kv := range s.Attributes() {
				for _, k := range show {
					if kv.Key == k {
						fmt.Fprintf(&b, " %s=%s", kv.Key, kv.Value.Emit())
					}
				}
			}
			b.WriteString("\n")
			walk(s.SpanContext().SpanID(), depth+1)
		}
	}
	walk(root, 0)
	return b.String()
}

// TestCoreOperationsTracedUnderASpan: under a recording span, each core
// operation is a child span with its table, partition, round trips and
// outcome, and each of its requests a grandchild (the HTTP request's span);
// a lost response settled by a read shows as outcome verified with its
// three round trips. Without a recording span nothing is recorded.
func TestCoreOperationsTracedUnderASpan(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	r := testrig.New(t)
	o := r.TableOptions()
	o.TracingProvider = table.ClientOptions().TracingProvider
	c := r.Env.Table(o)
	tb := testrig.NewTable[traced](t, c)

	ctx := context.Background()
	if _, err := tb.Insert(ctx, traced{"p", "untraced", 1}); err != nil {
		t.Fatal(err)
	}
	if n := len(rec.Ended()); n != 0 {
		t.Fatalf("%d spans without a recording parent", n)
	}

	ctx, root := tp.Tracer("test").Start(ctx, "root")
	res, err := tb.Insert(ctx, traced{"p", "a", 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Get(ctx, "p", "a", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Update(ctx, traced{"p", "a", 2}, res.ETag, table.Merge); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.Submit(ctx, []table.Op{tb.InsertOp(traced{"p", "b", 1}), tb.InsertOp(traced{"p", "c", 1})}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := table.Collect(tb.Query(ctx, &table.Query{Filter: table.PartitionKey("p")})); err != nil {
		t.Fatal(err)
	}
	r.Faults.Inject(faults.Fault{LoseResponse: true})
	if res, err := tb.Insert(ctx, traced{"p", "lost", 1}); err != nil || !res.Verified {
		t.Fatalf("insert after a lost response: %+v, %v", res, err)
	}
	if err := tb.Delete(ctx, "p", "a", azcore.ETagAny); err != nil {
		t.Fatal(err)
	}
	root.End()

	got := spanTree(rec.Ended(), root.SpanContext().SpanID(), "tablekit.table", "tablekit.partition", "tablekit.round_trips", "tablekit.outcome")
	name := tb.Name()
	want := strings.ReplaceAll(`table.Insert tablekit.table=T tablekit.partition=p tablekit.round_trips=1 tablekit.outcome=applied
  HTTP POST
table.Get tablekit.table=T tablekit.partition=p tablekit.round_trips=1
  HTTP GET
table.Update tablekit.table=T tablekit.partition=p tablekit.round_trips=1 tablekit.outcome=applied
  HTTP PATCH
table.Submit tablekit.table=T tablekit.partition=p tablekit.round_trips=1 tablekit.outcome=applied
  HTTP POST
table.Query tablekit.table=T tablekit.round_trips=1
  HTTP GET
table.Insert tablekit.table=T tablekit.partition=p tablekit.round_trips=3 tablekit.outcome=verified
  HTTP POST
  HTTP POST
  HTTP GET
table.Delete tablekit.table=T tablekit.partition=p tablekit.round_trips=1 tablekit.outcome=applied
  HTTP DELETE
`, "=T ", "="+name+" ")
	if got != want {
		t.Fatalf("span tree:\n%s\nwant:\n%s", got, want)
	}
}

// TestUntracedCoreAllocatesNothingExtra: with tablekit's client options
// (a tracing provider installed, the global providers no-op) and no
// recording span, point insert, point get, a 100-entity batch and a scan
// allocate what they allocate on a client without any tracing provider.
func TestUntracedCoreAllocatesNothingExtra(t *testing.T) {
	if testrig.Race {
		t.Skip("allocation counts vary under the race detector (sync.Pool drops items at random); make test runs this test without -race")
	}
	r := testrig.New(t)
	ctx := context.Background()
	// Not the rig's transport: it records every request, and its growing
	// record allocates unevenly.
	plain := &aztables.ClientOptions{}
	testrig.Fast.ApplyTo(&plain.ClientOptions)
	withTracing := &aztables.ClientOptions{}
	testrig.Fast.ApplyTo(&withTracing.ClientOptions)
	withTracing.TracingProvider = table.ClientOptions().TracingProvider
	// The values are made outside the measured calls.
	values := make([]traced, 2000)
	for i := range values {
		values[i] = traced{"b", fmt.Sprintf("%08d", i), i}
	}
	allocs := func(o *aztables.ClientOptions) map[string]float64 {
		tb := testrig.NewTable[traced](t, r.Env.Table(o))
		out := map[string]float64{}
		next := 0
		out["insert"] = testing.AllocsPerRun(50, func() {
			if _, err := tb.Insert(ctx, values[next]); err != nil {
				t.Fatal(err)
			}
			next++
		})
		out["get"] = testing.AllocsPerRun(50, func() {
			if _, err := tb.Get(ctx, "b", values[0].RowKey, nil); err != nil {
				t.Fatal(err)
			}
		})
		ops := make([]table.Op, 100)
		out["batch"] = testing.AllocsPerRun(5, func() {
			for i := range ops {
				ops[i] = tb.InsertOp(values[next])
				next++
			}
			if _, err := tb.Submit(ctx, ops, nil); err != nil {
				t.Fatal(err)
			}
		})
		out["scan"] = testing.AllocsPerRun(5, func() {
			if _, err := table.Collect(tb.Query(ctx, &table.Query{Filter: table.PartitionKey("b")})); err != nil {
				t.Fatal(err)
			}
		})
		return out
	}
	// Alternating, keeping each side's fewest: the emulator's and the
	// transport's own variations affect both alike.
	base, got := allocs(plain), allocs(withTracing)
	for range 2 {
		for op, n := range allocs(plain) {
			base[op] = min(base[op], n)
		}
		for op, n := range allocs(withTracing) {
			got[op] = min(got[op], n)
		}
	}
	for op, n := range got {
		// A point operation allocates the same every time; a batch or a
		// scan of about a thousand allocations varies by one between runs
		// (pools emptied by a collection). One more allocation per request
		// (the direct path all four share) shows in the point operations.
		slack := 0.5
		if op == "batch" || op == "scan" {
			slack = 1.5
		}
		if n > base[op]+slack {
			t.Errorf("%s: %.2f allocations with a tracing provider, %.2f without", op, n, base[op])
		}
	}
	t.Logf("allocations per operation without / with a tracing provider: %v / %v", base, got)
}
