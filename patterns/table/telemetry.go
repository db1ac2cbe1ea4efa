package table

import (
	"log/slog"

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
