package obs

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"time"

	"github.com/tablekit/tablekit/internal/retrycore"
	"github.com/tablekit/tablekit/retry"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Operation describes one exported operation: its span name
// ("secondaryindex.Insert") and its metric attribute sets, made once (a
// package-level variable per operation) so that recording allocates
// nothing.
type Operation struct {
	name      string
	write     bool
	writes    [4][]metric.AddOption // by outcome index
	retries   []metric.AddOption
	throttled [3][]metric.AddOption // by retrycore.ThrottleStatuses
}

// Read describes a read (or any operation without a write outcome).
func Read(name string) *Operation { return newOperation(name, false) }

// Write describes a write: its span and the tablekit.writes metric carry
// its outcome.
func Write(name string) *Operation { return newOperation(name, true) }

func newOperation(name string, write bool) *Operation {
	op := &Operation{name: name, write: write}
	opAttr := KeyOperation.String(name)
	for i, o := range outcomes {
		op.writes[i] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(opAttr, KeyOutcome.String(o)))}
	}
	op.retries = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(opAttr))}
	for i, s := range retrycore.ThrottleStatuses {
		op.throttled[i] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(opAttr, KeyStatus.Int(s)))}
	}
	return op
}

// Name returns the operation's span name.
func (op *Operation) Name() string { return op.name }

// Span is one operation in progress: its span (when traced), the Trace
// counting its requests, and what its end records. The zero Span of a core
// operation that is not traced records only a write's outcome metric.
type Span struct {
	o         *Obs
	op        *Operation
	ctx       context.Context
	span      trace.Span       // nil: not traced
	tr        *retrycore.Trace // nil: requests not counted
	start     time.Time
	table     string
	partition string
	log       bool // a pattern's operation: logs its end
}

// Start begins op of a pattern package on table (and partition, if known:
// else set it with SetPartition): a span from o's tracer, a child of ctx's
// span if any, and a Trace counting its requests. Use the returned
// context for the operation's requests, and End or EndWrite the Span.
func (o *Obs) Start(ctx context.Context, op *Operation, table, partition string) (context.Context, Span) {
	attrs := make([]attribute.KeyValue, 0, 2)
	if table != "" {
		attrs = append(attrs, KeyTable.String(Sanitize(table)))
	}
	if partition != "" {
		attrs = append(attrs, KeyPartition.String(Sanitize(partition)))
	}
	ctx, span := o.Tracer().Start(ctx, op.name, trace.WithAttributes(attrs...))
	if span.IsRecording() {
		ctx = withHTTPSpans(ctx)
	}
	ctx, tr := retrycore.Track(ctx)
	return ctx, Span{o: o, op: op, ctx: ctx, span: span, tr: tr, start: time.Now(), table: table, partition: partition, log: true}
}

// Child begins op of package table: when ctx carries a recording span, a
// child span (from that span's provider) and a Trace; otherwise nothing,
// at no cost (no allocation). Its metrics go to the global meter provider;
// it logs nothing.
func Child(ctx context.Context, op *Operation, table, partition string) (context.Context, Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, Span{op: op}
	}
	attrs := make([]attribute.KeyValue, 0, 2)
	if table != "" {
		attrs = append(attrs, KeyTable.String(Sanitize(table)))
	}
	if partition != "" {
		attrs = append(attrs, KeyPartition.String(Sanitize(partition)))
	}
	ctx, span := tracerOf(parent.TracerProvider()).Start(ctx, op.name, trace.WithAttributes(attrs...))
	ctx = withHTTPSpans(ctx)
	ctx, tr := retrycore.Track(ctx)
	return ctx, Span{op: op, ctx: ctx, span: span, tr: tr, start: time.Now(), table: table, partition: partition}
}

// Traced reports whether s records a span.
func (s *Span) Traced() bool { return s.span != nil }

// SetPartition records the operation's PartitionKey, once its keys are
// known.
func (s *Span) SetPartition(pk string) {
	s.partition = pk
	if s.span != nil {
		s.span.SetAttributes(KeyPartition.String(Sanitize(pk)))
	}
}

// Set records attributes of the operation on its span, their texts
// through Sanitize.
func (s *Span) Set(kvs ...attribute.KeyValue) {
	if s.span != nil {
		s.span.SetAttributes(sanitizeKVs(kvs)...)
	}
}

// SetPartition records pk on the recording span of ctx, if any: for a
// core operation whose keys are known only once its value is encoded.
func SetPartition(ctx context.Context, pk string) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(KeyPartition.String(Sanitize(pk)))
	}
}

// End ends a read (or an operation without a write outcome) with its
// error.
func (s *Span) End(err error) { s.end(err, -1) }

// EndWrite ends a write with its error and whether its success was
// verified after a lost response, recording its outcome.
func (s *Span) EndWrite(err error, verified bool) { s.end(err, outcomeIndex(err, verified)) }

// outcomeIndex is the outcome of a write that ended with err.
func outcomeIndex(err error, verified bool) int {
	switch {
	case err == nil && verified:
		return 3
	case err == nil:
		return 0
	case errors.Is(err, retry.ErrOutcomeUnknown):
		return 2
	}
	return 1
}

func (s *Span) end(err error, outcome int) {
	ctx := s.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	write := outcome >= 0 && s.op.write
	if s.span == nil && !s.log && !write {
		return // an untraced core read: nothing to record
	}
	in := s.o.instruments()
	if write {
		in.writes.Add(ctx, 1, s.op.writes[outcome]...)
	}
	if s.span == nil && !s.log {
		return // a core operation, not traced
	}
	tracked := s.tr != nil && s.tr.Tracked()
	var roundTrips, retries int
	if tracked {
		roundTrips, retries = s.tr.Attempts(), s.tr.Retries()
		if retries > 0 {
			in.retries.Add(ctx, int64(retries), s.op.retries...)
		}
		for i, st := range retrycore.ThrottleStatuses {
			if n := s.tr.Throttled(st); n > 0 {
				in.throttled.Add(ctx, int64(n), s.op.throttled[i]...)
			}
		}
	}
	var text string
	if err != nil {
		text = Sanitize(err.Error())
	}
	if s.span != nil && s.span.IsRecording() {
		var attrs []attribute.KeyValue
		if tracked {
			attrs = append(attrs, KeyRoundTrips.Int(roundTrips), KeyRetries.Int(retries))
		}
		if outcome >= 0 && s.op.write {
			attrs = append(attrs, KeyOutcome.String(outcomes[outcome]))
		}
		s.span.SetAttributes(attrs...)
		if err != nil {
			s.span.AddEvent("exception", trace.WithAttributes(
				attribute.String("exception.type", fmt.Sprintf("%T", err)),
				attribute.String("exception.message", text)))
			s.span.SetStatus(codes.Error, text)
		}
	}
	if s.span != nil {
		s.span.End()
	}
	if !s.log {
		return
	}
	level := slog.LevelDebug
	if err != nil && retries > 0 {
		level = slog.LevelWarn // it gave up: retries did not cure a failure
	}
	l := s.o.Logger()
	if !l.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 9)
	attrs = append(attrs, slog.String(string(KeyOperation), s.op.name))
	if s.table != "" {
		attrs = append(attrs, slog.String(string(KeyTable), s.table))
	}
	if s.partition != "" {
		attrs = append(attrs, slog.String(string(KeyPartition), s.partition))
	}
	if tracked {
		attrs = append(attrs, slog.Int(string(KeyRoundTrips), roundTrips), slog.Int(string(KeyRetries), retries))
	}
	if outcome >= 0 && s.op.write {
		attrs = append(attrs, slog.String(string(KeyOutcome), outcomes[outcome]))
	}
	attrs = append(attrs, slog.Duration("duration", time.Since(s.start)))
	if err != nil {
		attrs = append(attrs, slog.String(string(KeyError), text))
	}
	l.LogAttrs(ctx, level, s.op.name, attrs...)
}

// Seq2 is an iterator's operation: the span starts when iteration starts
// (with the context seq is then made with) and ends when it stops, with
// the first error met.
func Seq2[V any](o *Obs, ctx context.Context, op *Operation, table, partition string, seq func(context.Context) iter.Seq2[V, error]) iter.Seq2[V, error] {
	return func(yield func(V, error) bool) {
		ctx, sp := o.Start(ctx, op, table, partition)
		var err error
		defer func() { sp.End(err) }()
		for v, e := range seq(ctx) {
			if e != nil && err == nil {
				err = e
			}
			if !yield(v, e) {
				return
			}
		}
	}
}
