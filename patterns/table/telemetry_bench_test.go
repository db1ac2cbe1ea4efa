package table_test

import (
	"context"
	"testing"

	"github.com/tablekit/tablekit/keys"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// BenchmarkTelemetry measures what tracing costs a point insert and a
// point get against the emulator: the same Table and client, called with
// a plain context (untraced: nothing recorded) and under a recording span
// of the OpenTelemetry SDK (a batching span processor into an in-memory
// exporter), so that each call records its operation's span and its
// request's HTTP span. The sides alternate as in BenchmarkPointOps;
// traced/untraced is the speed ratio (below 1: tracing costs).
func BenchmarkTelemetry(b *testing.B) {
	ctx := context.Background()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
	defer tp.Shutdown(ctx)
	tctx, root := tp.Tracer("bench").Start(ctx, "root")
	defer root.End()
	for _, op := range []string{"insert", "get"} {
		b.Run(op, func(b *testing.B) {
			bn := newBench(b)
			if bn.probing() {
				return
			}
			tb := bn.tk(bn.table())
			const n = 200
			for i := range n {
				if _, err := tb.Insert(ctx, newRow("g", i)); err != nil {
					b.Fatal(err)
				}
			}
			call := func(c context.Context, i int) error {
				if op == "get" {
					_, err := tb.Get(c, "g", keys.Pad(uint64(i%n), 8), nil)
					return err
				}
				_, err := tb.Insert(c, newRow("p", i))
				return err
			}
			plain, traced := &side{name: "untraced"}, &side{name: "traced"}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				inOrder(i,
					func() { plain.measure(b, 1, func() error { return call(ctx, 2*i) }) },
					func() { traced.measure(b, 1, func() error { return call(tctx, 2*i+1) }) })
			}
			plain.report(b)
			traced.report(b)
			traced.compare(b, plain, true)
			if err := tp.ForceFlush(ctx); err != nil || len(exp.GetSpans()) < 2*b.N {
				b.Fatalf("%d spans exported for %d traced calls (%v)", len(exp.GetSpans()), b.N, err)
			}
			exp.Reset()
		})
	}
}
