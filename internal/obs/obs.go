// Package obs is tablekit's one implementation of observability: the
// OpenTelemetry tracer and meter of a package instance (from its options'
// Telemetry, or the global providers, looked up at use so that a program
// that sets them later still gets traces), the span of one operation with
// the documented attributes, the metric instruments (created once per
// provider), slog records with the same attribute names, the W3C trace
// context an intent carries across its queue, and the gated azcore tracing
// provider of tablekit-built clients. Every text that reaches a span
// through it (its own spans' attributes, events and status descriptions,
// and those azcore sets on the spans of requests, http.url included), and
// every error text of a log record, passes through one function, Sanitize:
// no query string, no entity key beyond the tablekit.partition attribute,
// no secret. The pattern packages call it at the entry and the end of each
// exported operation and keep no telemetry code of their own.
//
// Cost: an operation of a pattern package always starts a span (a no-op
// span without an SDK) and a retrycore.Trace for its round trips: a few
// allocations beside its round trips. An operation of package table (the
// hot paths) starts nothing unless its context carries a recording span
// (Child), and then allocates nothing for telemetry.
package obs

import (
	"log/slog"
	"reflect"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of tablekit's tracer and meter.
const ScopeName = "github.com/tablekit/tablekit"

// The attribute keys of spans, metrics and log records.
const (
	// KeyTable is the name of the table an operation addresses.
	KeyTable = attribute.Key("tablekit.table")
	// KeyPartition is the PartitionKey an operation addresses. RowKeys are
	// never recorded, in no attribute, event or status text (see
	// Sanitize): they often hold personal data (an email, a name).
	KeyPartition = attribute.Key("tablekit.partition")
	// KeyRoundTrips is the number of requests an operation sent, when its
	// clients count them (tablekit's retry policy is in their pipeline).
	KeyRoundTrips = attribute.Key("tablekit.round_trips")
	// KeyRetries is the number of those requests that were resends.
	KeyRetries = attribute.Key("tablekit.retries")
	// KeyOutcome is a write's outcome: one of the outcome values.
	KeyOutcome = attribute.Key("tablekit.outcome")
	// KeyOperation names the operation in metrics and logs, as its span is
	// named ("secondaryindex.Insert").
	KeyOperation = attribute.Key("tablekit.operation")
	// KeyStatus is the HTTP status of a throttling answer.
	KeyStatus = attribute.Key("http.response.status_code")
	// KeyIntentID and KeyIntentKind identify an eventual intent.
	KeyIntentID   = attribute.Key("tablekit.intent.id")
	KeyIntentKind = attribute.Key("tablekit.intent.kind")
	// KeyIntentEvent is what a worker did with an intent's delivery
	// (processed, failed, poisoned, dropped, ...).
	KeyIntentEvent = attribute.Key("tablekit.intent.event")
	// KeyDeliveries is the number of deliveries of an intent's message.
	KeyDeliveries = attribute.Key("tablekit.intent.deliveries")
	// KeyQueue is the name of an intents' queue.
	KeyQueue = attribute.Key("tablekit.queue")
	// KeyMessageID is the queue message of an intent's delivery.
	KeyMessageID = attribute.Key("tablekit.message.id")
	// KeyError is the text of an error, through Sanitize, in log records.
	KeyError = attribute.Key("error")
)

// OtherKind is the tablekit.intent.kind a worker records for an intent
// whose kind none of its handlers has (a message's kind is whatever its
// writer chose).
const OtherKind = "unknown"

// The outcomes of a write (the KeyOutcome attribute).
const (
	// Applied: the write succeeded.
	Applied = "applied"
	// NotApplied: the write certainly did not take effect (refused before
	// the network, or by the service).
	NotApplied = "not_applied"
	// Unknown: the write may or may not have been applied
	// (ErrOutcomeUnknown).
	Unknown = "unknown"
	// Verified: a response was lost and a read proved the write applied.
	Verified = "verified"
)

// outcomes are the outcome values by index.
var outcomes = [4]string{Applied, NotApplied, Unknown, Verified}

// Config is the telemetry a package's options give. Its fields are those
// of table.Telemetry, in the same order, so a *table.Telemetry converts to
// a *Config.
type Config struct {
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	Logger         *slog.Logger
}

// Obs is the telemetry of one package instance (a Store, a Queue, ...). A
// nil *Obs uses the global providers and slog.Default(). It is safe for
// concurrent use.
type Obs struct {
	tp  trace.TracerProvider // nil: otel.GetTracerProvider(), at use
	mp  metric.MeterProvider // nil: otel.GetMeterProvider(), at use
	log *slog.Logger         // nil: slog.Default(), at use
}

// New returns the telemetry c configures; nil fields (or a nil c) mean the
// global providers and slog.Default().
func New(c *Config) *Obs {
	if c == nil {
		return &Obs{}
	}
	return &Obs{tp: c.TracerProvider, mp: c.MeterProvider, log: c.Logger}
}

// Tracer returns the tracer of o's provider.
func (o *Obs) Tracer() trace.Tracer {
	var tp trace.TracerProvider
	if o != nil {
		tp = o.tp
	}
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return tracerOf(tp)
}

// Logger returns o's logger.
func (o *Obs) Logger() *slog.Logger {
	if o != nil && o.log != nil {
		return o.log
	}
	return slog.Default()
}

// instruments returns the instruments of o's meter provider.
func (o *Obs) instruments() *instruments {
	var mp metric.MeterProvider
	if o != nil {
		mp = o.mp
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	return instrumentsOf(mp)
}

// meter returns the meter of o's provider.
func (o *Obs) meter() metric.Meter {
	var mp metric.MeterProvider
	if o != nil {
		mp = o.mp
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	return mp.Meter(ScopeName)
}

// tracers caches a tracer per provider, instrumentSets the instruments.
var tracers, instrumentSets sync.Map

// cacheable reports whether a provider can be a map key: a provider of a
// type that is not comparable is looked up every time instead.
func cacheable(p any) bool { return reflect.TypeOf(p).Comparable() }

func tracerOf(tp trace.TracerProvider) trace.Tracer {
	if !cacheable(tp) {
		return tp.Tracer(ScopeName)
	}
	if t, ok := tracers.Load(tp); ok {
		return t.(trace.Tracer)
	}
	t, _ := tracers.LoadOrStore(tp, tp.Tracer(ScopeName))
	return t.(trace.Tracer)
}

// instruments are the synchronous instruments of one meter provider.
type instruments struct {
	writes     metric.Int64Counter
	retries    metric.Int64Counter
	throttled  metric.Int64Counter
	intents    metric.Int64Counter
	deliveries metric.Int64Histogram
	lag        metric.Float64Histogram
	renewals   metric.Int64Counter
	lost       metric.Int64Counter
}

func instrumentsOf(mp metric.MeterProvider) *instruments {
	if !cacheable(mp) {
		return newInstruments(mp)
	}
	if in, ok := instrumentSets.Load(mp); ok {
		return in.(*instruments)
	}
	in, _ := instrumentSets.LoadOrStore(mp, newInstruments(mp))
	return in.(*instruments)
}

// The instruments' names, for the README and the tests.
const (
	MetricWrites     = "tablekit.writes"
	MetricRetries    = "tablekit.retries"
	MetricThrottled  = "tablekit.throttled"
	MetricIntents    = "tablekit.eventual.intents"
	MetricDeliveries = "tablekit.eventual.deliveries"
	MetricLag        = "tablekit.eventual.lag"
	MetricRenewals   = "tablekit.eventual.lease.renewals"
	MetricLostLeases = "tablekit.eventual.lease.lost"
	MetricPending    = "tablekit.eventual.pending"
	MetricPendingAge = "tablekit.eventual.pending.age"
	MetricDepth      = "tablekit.eventual.queue.depth"
)

func newInstruments(mp metric.MeterProvider) *instruments {
	m := mp.Meter(ScopeName)
	var nm noop.Meter
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		if err != nil || c == nil {
			otel.Handle(err)
			c, _ = nm.Int64Counter(name)
		}
		return c
	}
	in := &instruments{
		writes:    counter(MetricWrites, "{write}", "Writes by operation and outcome (applied, not_applied, unknown, verified)."),
		retries:   counter(MetricRetries, "{request}", "Requests resent after a transient failure or a conflict, by operation."),
		throttled: counter(MetricThrottled, "{response}", "Throttling answers (429, 503, 500) by operation and status."),
		intents:   counter(MetricIntents, "{intent}", "Intent deliveries a worker finished, by kind and event (processed, failed, poisoned, dropped)."),
		renewals:  counter(MetricRenewals, "{renewal}", "Lease renewals of running intents."),
		lost:      counter(MetricLostLeases, "{lease}", "Leases a worker lost (another worker may hold the intent)."),
	}
	var err error
	if in.deliveries, err = m.Int64Histogram(MetricDeliveries, metric.WithUnit("{delivery}"), metric.WithDescription("Deliveries an intent took, when it was processed or poisoned."),
		metric.WithExplicitBucketBoundaries(1, 2, 3, 4, 5, 10, 20)); err != nil || in.deliveries == nil {
		otel.Handle(err)
		in.deliveries, _ = nm.Int64Histogram(MetricDeliveries)
	}
	if in.lag, err = m.Float64Histogram(MetricLag, metric.WithUnit("s"), metric.WithDescription("Consistency lag: from an intent's creation to its completion."),
		metric.WithExplicitBucketBoundaries(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600)); err != nil || in.lag == nil {
		otel.Handle(err)
		in.lag, _ = nm.Float64Histogram(MetricLag)
	}
	return in
}
