package obs_test

import (
	"context"
	"testing"

	"github.com/tablekit/tablekit/internal/obs"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// BenchmarkOperation is the telemetry of one pattern operation (Start,
// then EndWrite) without its round trips: with the global no-op providers,
// and with the SDK (a batching span processor into an in-memory exporter,
// and a manual metric reader).
func BenchmarkOperation(b *testing.B) {
	ctx := context.Background()
	b.Run("noop", func(b *testing.B) {
		o := obs.New(nil)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			_, sp := o.Start(ctx, opWrite, "tbl", "p")
			sp.EndWrite(nil, false)
		}
	})
	b.Run("sdk", func(b *testing.B) {
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		defer tp.Shutdown(ctx)
		o := obs.New(&obs.Config{TracerProvider: tp, MeterProvider: mp})
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			_, sp := o.Start(ctx, opWrite, "tbl", "p")
			sp.EndWrite(nil, false)
			if i%10000 == 0 {
				exp.Reset()
			}
		}
	})
}

// BenchmarkChild is a core operation's telemetry without its round trip:
// untraced (no recording span in the context: nothing but the outcome
// metric on the no-op provider), and under a recording span of the SDK.
func BenchmarkChild(b *testing.B) {
	ctx := context.Background()
	b.Run("untraced", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			_, sp := obs.Child(ctx, opWrite, "tbl", "p")
			sp.EndWrite(nil, false)
		}
	})
	b.Run("traced", func(b *testing.B) {
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
		defer tp.Shutdown(ctx)
		ctx, root := tp.Tracer("bench").Start(ctx, "root")
		defer root.End()
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			_, sp := obs.Child(ctx, opWrite, "tbl", "p")
			sp.EndWrite(nil, false)
			if i%10000 == 0 {
				exp.Reset()
			}
		}
	})
}

// BenchmarkSanitize is what Sanitize costs each text of a span: a request
// span's entity URL, a SAS client's URL, an error's text naming keys, and
// a text with nothing to remove (a partition, most attributes).
func BenchmarkSanitize(b *testing.B) {
	for _, c := range []struct{ name, text string }{
		{"entity URL", "https://account.table.core.windows.net/orders(PartitionKey='Sales',RowKey='empid%21000001')"},
		{"SAS URL", "https://account.table.core.windows.net/$batch?se=2025-01-01T00%3A00%3A00Z&sig=abcdefABCDEF0123456789%2B%2F%3D&sp=raud&sv=2019-02-02&tn=orders"},
		{"error", `table: get orders (PartitionKey "Sales", RowKey "empid!000001"): 404 ResourceNotFound`},
		{"plain", "Sales"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				obs.Sanitize(c.text)
			}
		})
	}
}
