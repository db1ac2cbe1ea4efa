package table

import (
	"log/slog"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/tablekit/tablekit/internal/obs"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Telemetry is where a pattern package's value (a Store, a Log, a Queue,
// ...) sends its traces, metrics and log records: each package's Options
// has a Telemetry field of this type. A nil *Telemetry, and each nil
// field, means the global providers (otel.GetTracerProvider(),
// otel.GetMeterProvider(), looked up at each use, so that a program that
// sets them after building its values still gets telemetry) and
// slog.Default(). See the package documentation's Observability section
// for what is recorded. A Telemetry may be shared by many values and must
// not change once in use.
type Telemetry struct {
	// TracerProvider makes the spans of the package's operations.
	TracerProvider trace.TracerProvider
	// MeterProvider makes the metric instruments.
	MeterProvider metric.MeterProvider
	// Logger receives the package's log records (debug per operation,
	// warn for an operation that failed after retries, error for a
	// poisoned intent).
	Logger *slog.Logger
}

// A *Telemetry converts to internal/obs's Config: the same fields.
var _ = (*obs.Config)((*Telemetry)(nil))

// TracingProvider returns the azcore tracing provider tablekit's clients
// use (ClientOptions): OpenTelemetry through azotel, with every SDK call
// made under a recording span (your own) recorded as child spans (the SDK
// method's, then "HTTP GET" with the SDK's attributes), in that span's
// tracer provider, their texts cut as the package documentation's
// Observability section says (a URL names the table, queue or container,
// without the entity's keys, a blob's name or the query string). Calls
// made without a recording span record nothing. (tablekit's own operations trace their
// requests whatever the client's options.) Add it to clients you build
// yourself with
//
//	opts.TracingProvider = table.TracingProvider()
//
// or use azotel.NewTracingProvider(otel.GetTracerProvider(), nil), which
// also traces SDK calls made outside any span.
func TracingProvider() tracing.Provider { return obs.TracingProvider() }

// The operations of this package that record telemetry, when traced (see
// obs.Child).
var (
	opInsert = obs.Write("table.Insert")
	opUpsert = obs.Write("table.Upsert")
	opUpdate = obs.Write("table.Update")
	opDelete = obs.Write("table.Delete")
	opModify = obs.Write("table.Modify")
	opSubmit = obs.Write("table.Submit")
	opGet    = obs.Read("table.Get")
	opQuery  = obs.Read("table.Query")
)

// onePartition is the PartitionKey every op has, or "".
func onePartition(ops []Op) string {
	if len(ops) == 0 {
		return ""
	}
	for _, o := range ops[1:] {
		if o.pk != ops[0].pk {
			return ""
		}
	}
	return ops[0].pk
}
