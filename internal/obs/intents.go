package obs

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// This file is the telemetry of package eventual: the trace context an
// intent carries in its envelope, the worker's metrics, and the pending
// intents' gauges.

// traceContext is the W3C Trace Context propagator.
var traceContext propagation.TraceContext

// Inject returns the W3C traceparent and tracestate of ctx's span, or ""
// when ctx carries no valid span context (nothing traced).
func Inject(ctx context.Context) (traceparent, tracestate string) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return "", ""
	}
	c := propagation.MapCarrier{}
	traceContext.Inject(ctx, c)
	return c["traceparent"], c["tracestate"]
}

// Extract returns ctx with the remote span context of traceparent and
// tracestate as its parent when they are valid W3C Trace Context whose
// sampled flag is set, and ctx as it is otherwise (empty, not valid, or
// not sampled). They come from a queue others may write to: a writer may
// choose the trace a delivery's span joins, but not keep it from being
// recorded, which an unsampled parent would do under the SDK's default
// parent-based sampler. Without a parent, the span is a root, which the
// worker's own sampler decides on.
func Extract(ctx context.Context, traceparent, tracestate string) context.Context {
	if traceparent == "" {
		return ctx
	}
	remote := traceContext.Extract(context.Background(), propagation.MapCarrier{"traceparent": traceparent, "tracestate": tracestate})
	if sc := trace.SpanContextFromContext(remote); sc.IsValid() && sc.IsSampled() {
		return trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	return ctx
}

// Intent records a worker's event for an intent of kind (one of a
// bounded set: the worker's kinds, or a placeholder for any other): the
// tablekit.eventual.intents counter, and for a processed or poisoned
// intent its deliveries (processed: also its lag, from since to now, when
// since is not zero).
func (o *Obs) Intent(ctx context.Context, event, kind string, deliveries int64, since time.Time) {
	in := o.instruments()
	set := metric.WithAttributeSet(attribute.NewSet(KeyIntentKind.String(kind), KeyIntentEvent.String(event)))
	in.intents.Add(ctx, 1, set)
	if event == "processed" || event == "poisoned" {
		set := metric.WithAttributeSet(attribute.NewSet(KeyIntentKind.String(kind)))
		if event == "processed" && !since.IsZero() {
			in.lag.Record(ctx, max(time.Since(since).Seconds(), 0), set)
		}
		in.deliveries.Record(ctx, deliveries, set)
	}
}

// Lease records a lease renewal (renewed) or a lost lease.
func (o *Obs) Lease(ctx context.Context, renewed bool) {
	in := o.instruments()
	if renewed {
		in.renewals.Add(ctx, 1)
		return
	}
	in.lost.Add(ctx, 1)
}

// Log writes a record at level with attrs, if the logger takes it.
func (o *Obs) Log(ctx context.Context, level slog.Level, msg string, attrs ...slog.Attr) {
	l := o.Logger()
	if l.Enabled(ctx, level) {
		l.LogAttrs(ctx, level, msg, attrs...)
	}
}

// Pending is what ObservePending's callback reports.
type Pending struct {
	// Count is the number of pending intents; Oldest the age of the
	// oldest (0 when there are none); both when Counted.
	Count   int64
	Oldest  time.Duration
	Counted bool
	// Depth is the queue's approximate message count, when HasDepth.
	Depth    int64
	HasDepth bool
}

// ObservePending registers observable gauges (tablekit.eventual.pending,
// tablekit.eventual.pending.age, tablekit.eventual.queue.depth) on o's
// meter, read by observe at each collection, with the collection's
// context; attrs identify the queue. Unregister the returned Registration
// to stop.
func (o *Obs) ObservePending(observe func(context.Context) (Pending, error), attrs ...attribute.KeyValue) (metric.Registration, error) {
	m := o.meter()
	count, err := m.Int64ObservableGauge(MetricPending, metric.WithUnit("{intent}"), metric.WithDescription("Committed intents whose worker has not finished them (their commit records)."))
	if err != nil {
		return nil, err
	}
	age, err := m.Float64ObservableGauge(MetricPendingAge, metric.WithUnit("s"), metric.WithDescription("Age of the oldest pending intent: how stale an index may be."))
	if err != nil {
		return nil, err
	}
	depth, err := m.Int64ObservableGauge(MetricDepth, metric.WithUnit("{message}"), metric.WithDescription("Approximate number of messages in the intents' queue (invisible ones included)."))
	if err != nil {
		return nil, err
	}
	set := metric.WithAttributeSet(attribute.NewSet(attrs...))
	return m.RegisterCallback(func(ctx context.Context, ob metric.Observer) error {
		p, err := observe(ctx)
		if p.Counted {
			ob.ObserveInt64(count, p.Count, set)
			ob.ObserveFloat64(age, p.Oldest.Seconds(), set)
		}
		if p.HasDepth {
			ob.ObserveInt64(depth, p.Depth, set)
		}
		if err != nil {
			// The SDK hands it to otel.Handle, which may log it.
			return errors.New(Sanitize(err.Error()))
		}
		return nil
	}, count, age, depth)
}
