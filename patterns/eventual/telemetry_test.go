package eventual_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/hostile"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/table"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// telemetry is an SDK tracer provider with a span recorder, a meter
// provider with a manual reader, and a debug logger into a buffer.
type telemetry struct {
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
	tp     *sdktrace.TracerProvider
	cfg    *table.Telemetry
	mu     sync.Mutex
	logs   bytes.Buffer
}

func (tm *telemetry) Write(p []byte) (int, error) {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.logs.Write(p)
}

func (tm *telemetry) logged() string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.logs.String()
}

func newTelemetry(t *testing.T) *telemetry {
	tm := &telemetry{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	tm.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tm.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(tm.reader))
	t.Cleanup(func() { tm.tp.Shutdown(context.Background()); mp.Shutdown(context.Background()) })
	tm.cfg = &table.Telemetry{TracerProvider: tm.tp, MeterProvider: mp, Logger: slog.New(slog.NewTextHandler(tm, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	return tm
}

// metrics returns the collected metrics by name.
func (tm *telemetry) metrics(t *testing.T) map[string]metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := tm.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

// sum is the value of a counter's data point with attributes attrs
// ("k=v,k=v", sorted).
func sum(data metricdata.Aggregation, attrs string) int64 {
	s, _ := data.(metricdata.Sum[int64])
	for _, dp := range s.DataPoints {
		if dp.Attributes.Encoded(attribute.DefaultEncoder()) == attrs {
			return dp.Value
		}
	}
	return 0
}

func attr(s sdktrace.ReadOnlySpan, k string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == k {
			return kv.Value.Emit()
		}
	}
	return ""
}

func named(spans []sdktrace.ReadOnlySpan, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// TestTelemetryCommitToWorker: a traced Commit whose batch response is
// lost shows as outcome verified; its worker's run of each intent is an
// eventual.Handle span in the same trace, a child of the Commit's span,
// with the index writes below it; the metrics count the Commit's outcome,
// each processed intent, its deliveries and its consistency lag.
func TestTelemetryCommitToWorker(t *testing.T) {
	t.Parallel()
	tm := newTelemetry(t)
	r := newRig(t, &eventual.Options{Telemetry: tm.cfg})
	ctx, root := tm.tp.Tracer("app").Start(context.Background(), "request")
	r.Faults.Inject(faults.Fault{LoseResponse: true, Match: r.onTable(func(q *http.Request) bool { return strings.HasSuffix(q.URL.Path, "$batch") })})
	intents := []eventual.Draft{indexKind.New(indexOrder{"c1", "o1", "a@x"}), indexKind.New(indexOrder{"c1", "o1", "a@x"})}
	res, err := r.q.Commit(ctx, r.orders.Client(), []table.Op{r.orders.InsertOp(order{Customer: "c1", ID: "o1", Email: "a@x", Total: 5})}, intents...)
	if err != nil || !res.Batch.Verified {
		t.Fatalf("Commit: %+v, %v", res, err)
	}
	root.End()
	w := r.worker(t, nil)
	stop := start(t, w)
	drain(t, w)
	stop()

	spans := tm.spans.Ended()
	commits := named(spans, "eventual.Commit")
	if len(commits) != 1 {
		t.Fatalf("%d eventual.Commit spans", len(commits))
	}
	c := commits[0]
	if c.Parent().SpanID() != root.SpanContext().SpanID() || attr(c, "tablekit.outcome") != "verified" || attr(c, "tablekit.table") != r.orders.Name() ||
		attr(c, "tablekit.partition") != "c1" || attr(c, "tablekit.round_trips") != "7" || attr(c, "tablekit.retries") != "1" {
		// 7: two reserves, the batch and its resend, the verifying read,
		// two releases.
		t.Fatalf("eventual.Commit: parent %v, attributes %v", c.Parent(), c.Attributes())
	}
	handles := named(spans, "eventual.Handle")
	if len(handles) != 2 {
		t.Fatalf("%d eventual.Handle spans, want 2", len(handles))
	}
	for _, h := range handles {
		if h.SpanContext().TraceID() != root.SpanContext().TraceID() || h.Parent().SpanID() != c.SpanContext().SpanID() || !h.Parent().IsRemote() {
			t.Fatalf("eventual.Handle is not the Commit's child: parent %v", h.Parent())
		}
		if attr(h, "tablekit.intent.event") != "processed" || attr(h, "tablekit.intent.kind") != "index-order" || attr(h, "tablekit.table") != r.orders.Name() ||
			attr(h, "tablekit.partition") != "c1" || attr(h, "tablekit.intent.deliveries") != "1" || h.Status().Code == codes.Error {
			t.Fatalf("eventual.Handle: %v, %v", h.Attributes(), h.Status())
		}
		// The handler's reads and writes, and the worker's own steps, are
		// below it.
		var below []string
		for _, s := range spans {
			if s.Parent().SpanID() == h.SpanContext().SpanID() {
				below = append(below, s.Name())
			}
		}
		if got := strings.Join(below, " "); !strings.Contains(got, "table.Get table.Upsert") || !strings.Contains(got, "table.Delete") {
			t.Fatalf("below eventual.Handle: %s", got)
		}
	}

	m := tm.metrics(t)
	if n := sum(m["tablekit.writes"], "tablekit.operation=eventual.Commit,tablekit.outcome=verified"); n != 1 {
		t.Fatalf("tablekit.writes for the Commit: %d", n)
	}
	if n := sum(m["tablekit.eventual.intents"], "tablekit.intent.event=processed,tablekit.intent.kind=index-order"); n != 2 {
		t.Fatalf("processed intents: %d", n)
	}
	lag, _ := m["tablekit.eventual.lag"].(metricdata.Histogram[float64])
	deliveries, _ := m["tablekit.eventual.deliveries"].(metricdata.Histogram[int64])
	if len(lag.DataPoints) != 1 || lag.DataPoints[0].Count != 2 || lag.DataPoints[0].Sum <= 0 {
		t.Fatalf("lag: %+v", lag)
	}
	if len(deliveries.DataPoints) != 1 || deliveries.DataPoints[0].Count != 2 || deliveries.DataPoints[0].Sum != 2 {
		t.Fatalf("deliveries: %+v", deliveries)
	}
	if !strings.Contains(tm.logged(), `level=DEBUG msg="eventual: processed" tablekit.intent.id=`+intents[0].ID()) {
		t.Fatalf("log: %s", tm.logged())
	}
}

// TestTelemetryPoisonAndFailures: a handler that keeps failing counts a
// failure, then a poisoning, with its deliveries, logged at warn then
// error; its spans carry the error.
func TestTelemetryPoisonAndFailures(t *testing.T) {
	t.Parallel()
	tm := newTelemetry(t)
	r := newRig(t, &eventual.Options{Telemetry: tm.cfg})
	ctx := context.Background()
	if _, err := r.q.Enqueue(ctx, indexKind.New(indexOrder{"c1", "o1", "a@x"})); err != nil {
		t.Fatal(err)
	}
	opts := workerOptions()
	opts.MaxDeliveries = 2
	w, err := eventual.NewWorker(r.q, []eventual.Handler{indexKind.Handle(func(context.Context, eventual.Intent[indexOrder]) error { return errors.New("disk on fire") })}, opts)
	if err != nil {
		t.Fatal(err)
	}
	stop := start(t, w)
	drain(t, w)
	stop()
	m := tm.metrics(t)
	if f, p := sum(m["tablekit.eventual.intents"], "tablekit.intent.event=failed,tablekit.intent.kind=index-order"), sum(m["tablekit.eventual.intents"], "tablekit.intent.event=poisoned,tablekit.intent.kind=index-order"); f != 1 || p != 1 {
		t.Fatalf("failed %d, poisoned %d; want 1 and 1", f, p)
	}
	if d, _ := m["tablekit.eventual.deliveries"].(metricdata.Histogram[int64]); len(d.DataPoints) != 1 || d.DataPoints[0].Sum != 2 {
		t.Fatalf("deliveries: %+v", d)
	}
	if _, ok := m["tablekit.eventual.lag"]; ok {
		t.Fatal("lag recorded for an intent that never completed")
	}
	handles := named(tm.spans.Ended(), "eventual.Handle")
	if len(handles) != 2 || attr(handles[1], "tablekit.intent.event") != "poisoned" || handles[1].Status().Description == "" || !strings.Contains(handles[1].Status().Description, "disk on fire") {
		t.Fatalf("spans: %v", handles)
	}
	logs := tm.logged()
	if !strings.Contains(logs, `level=WARN msg="eventual: failed"`) || !strings.Contains(logs, `level=ERROR msg="eventual: poisoned"`) {
		t.Fatalf("logs: %s", logs)
	}
}

// TestTelemetryRejectedBeforeTheNetwork: an operation refused before
// anything is sent records its rejection (a span with the error, outcome
// not_applied, a tablekit.writes count) and nothing else: no request, no
// child span, no round trips.
func TestTelemetryRejectedBeforeTheNetwork(t *testing.T) {
	t.Parallel()
	tm := newTelemetry(t)
	r := newRig(t, &eventual.Options{Telemetry: tm.cfg})
	ctx := context.Background()
	_, err := r.q.Commit(ctx, r.orders.Client(), nil, indexKind.New(indexOrder{"c1", "o1", "a@x"}))
	if !errors.Is(err, eventual.ErrInvalid) {
		t.Fatalf("Commit without ops: %v", err)
	}
	_, err = r.q.Enqueue(ctx, eventual.NewKind[int]("").New(1))
	if !errors.Is(err, eventual.ErrInvalid) {
		t.Fatalf("Enqueue of an invalid kind: %v", err)
	}
	if n := r.Faults.Count(); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
	spans := tm.spans.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2: %v", len(spans), spans)
	}
	for _, s := range spans {
		if s.Status().Code != codes.Error || attr(s, "tablekit.outcome") != "not_applied" || attr(s, "tablekit.round_trips") != "" || s.Parent().IsValid() {
			t.Fatalf("span %s: %v %v", s.Name(), s.Status(), s.Attributes())
		}
	}
	m := tm.metrics(t)
	if sum(m["tablekit.writes"], "tablekit.operation=eventual.Commit,tablekit.outcome=not_applied") != 1 || sum(m["tablekit.writes"], "tablekit.operation=eventual.Enqueue,tablekit.outcome=not_applied") != 1 {
		t.Fatalf("writes: %+v", m["tablekit.writes"])
	}
	for name := range m {
		if name != "tablekit.writes" {
			t.Fatalf("metric %s recorded", name)
		}
	}
}

// TestObservePending: ObservePending reports the committed intents not yet
// run, the age of the oldest, and the queue's depth, at each collection;
// nothing once unregistered.
func TestObservePending(t *testing.T) {
	t.Parallel()
	tm := newTelemetry(t)
	r := newRig(t, &eventual.Options{Telemetry: tm.cfg})
	ctx := context.Background()
	reg, err := r.q.ObservePending()
	if err != nil {
		t.Fatal(err)
	}
	gauge := func(m map[string]metricdata.Aggregation, name string) string {
		switch g := m[name].(type) {
		case metricdata.Gauge[int64]:
			return fmt.Sprint(g.DataPoints[0].Value, " ", g.DataPoints[0].Attributes.Encoded(attribute.DefaultEncoder()))
		case metricdata.Gauge[float64]:
			return fmt.Sprint(g.DataPoints[0].Value)
		}
		return "none"
	}
	m := tm.metrics(t)
	queue := "tablekit.queue=" + queueNameOf(r)
	if gauge(m, "tablekit.eventual.pending") != "0 "+queue || gauge(m, "tablekit.eventual.pending.age") != "0" || gauge(m, "tablekit.eventual.queue.depth") != "0 "+queue {
		t.Fatalf("empty: %s, %s, %s", gauge(m, "tablekit.eventual.pending"), gauge(m, "tablekit.eventual.pending.age"), gauge(m, "tablekit.eventual.queue.depth"))
	}
	d := indexKind.New(indexOrder{"c1", "o1", "a@x"})
	if _, err := r.q.Commit(ctx, r.orders.Client(), []table.Op{r.orders.InsertOp(order{Customer: "c1", ID: "o1", Email: "a@x"})}, d); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // an age above zero
	m = tm.metrics(t)
	if gauge(m, "tablekit.eventual.pending") != "1 "+queue || gauge(m, "tablekit.eventual.pending.age") == "0" || gauge(m, "tablekit.eventual.queue.depth") != "1 "+queue {
		t.Fatalf("one pending: %s, %s, %s", gauge(m, "tablekit.eventual.pending"), gauge(m, "tablekit.eventual.pending.age"), gauge(m, "tablekit.eventual.queue.depth"))
	}
	if err := reg.Unregister(); err != nil {
		t.Fatal(err)
	}
	r.Faults.Reset()
	if m = tm.metrics(t); gauge(m, "tablekit.eventual.pending") != "none" || r.Faults.Count() != 0 {
		t.Fatalf("after Unregister: %s, %d requests", gauge(m, "tablekit.eventual.pending"), r.Faults.Count())
	}
}

func queueNameOf(r *rig) string {
	u := r.queue.URL()
	return u[strings.LastIndex(u, "/")+1:]
}

// TestTraceContextInTheEnvelope: an intent enqueued by a traced Queue
// carries the trace context of its Enqueue span, a child of the caller's;
// without a span anywhere (a Queue on the global no-op provider, called
// outside any span) the envelope carries none.
func TestTraceContextInTheEnvelope(t *testing.T) {
	t.Parallel()
	tm := newTelemetry(t)
	r := newRig(t, &eventual.Options{Telemetry: tm.cfg})
	untraced, err := eventual.New(r.queue, r.poison, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, span := tm.tp.Tracer("app").Start(context.Background(), "request")
	defer span.End()
	for _, traced := range []bool{false, true} {
		q, c := untraced, context.Background()
		if traced {
			q, c = r.q, ctx
		}
		if _, err := q.Enqueue(c, indexKind.New(indexOrder{"c1", "o1", "a@x"})); err != nil {
			t.Fatal(err)
		}
		resp, err := r.queue.DequeueMessage(context.Background(), nil)
		if err != nil || len(resp.Messages) != 1 {
			t.Fatalf("dequeue: %v", err)
		}
		env := decodeEnvelope(t, *resp.Messages[0].MessageText)
		want := ""
		if traced {
			want = fmt.Sprintf("00-%s-", trace.SpanContextFromContext(ctx).TraceID())
		}
		if tp, _ := env["tp"].(string); (want == "") != (tp == "") || !strings.HasPrefix(tp, want) {
			t.Fatalf("traced %v: traceparent %q", traced, tp)
		}
		if _, err := r.queue.DeleteMessage(context.Background(), *resp.Messages[0].MessageID, *resp.Messages[0].PopReceipt, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// decodeEnvelope reads a message's envelope as JSON.
func decodeEnvelope(t *testing.T, text string) map[string]any {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(text)
	if err != nil {
		t.Fatal(err)
	}
	var env map[string]any
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatal(err)
	}
	return env
}

// forgeIndexIntent enqueues, as a writer of the queue would, an intent of
// indexKind for an order that does not exist (its handler then has
// nothing to do but succeed), with kind, creation time and trace context
// of the writer's choice.
func forgeIndexIntent(t *testing.T, r *rig, kind string, created time.Time, traceparent string) {
	t.Helper()
	p, err := json.Marshal(indexOrder{"c-forged", hostile.ID(), "forged@x"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hostile.Forge(context.Background(), r.queue, hostile.Envelope{V: 1, ID: hostile.ID(), Kind: kind, Created: created, Payload: p, TP: traceparent}); err != nil {
		t.Fatal(err)
	}
}

// TestTelemetryForgedKindsAreBounded: a queue writer's 25 messages of 25
// kinds no handler has, each poisoned, add one metric series (kind
// "unknown") to the one of the worker's own kind, not 25; their spans
// record the same bounded kind.
func TestTelemetryForgedKindsAreBounded(t *testing.T) {
	t.Parallel()
	tm := newTelemetry(t)
	r := newRig(t, &eventual.Options{Telemetry: tm.cfg})
	ctx := context.Background()
	for i := range 25 {
		forgeIndexIntent(t, r, fmt.Sprintf("forged-%02d-%s", i, strings.Repeat("x", 100)), time.Now(), "")
	}
	if _, err := r.q.Enqueue(ctx, indexKind.New(indexOrder{"c1", "o1", "a@x"})); err != nil {
		t.Fatal(err)
	}
	opts := longLease() // one delivery each: spans counted exactly
	opts.MaxDeliveries = 1
	w := r.worker(t, opts)
	stop := start(t, w)
	drain(t, w)
	stop()
	m := tm.metrics(t)
	intents, _ := m["tablekit.eventual.intents"].(metricdata.Sum[int64])
	got := map[string]int64{}
	for _, dp := range intents.DataPoints {
		got[dp.Attributes.Encoded(attribute.DefaultEncoder())] = dp.Value
	}
	want := map[string]int64{
		"tablekit.intent.event=poisoned,tablekit.intent.kind=unknown":      25,
		"tablekit.intent.event=processed,tablekit.intent.kind=index-order": 1,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("tablekit.eventual.intents series: %v, want %v", got, want)
	}
	if d, _ := m["tablekit.eventual.deliveries"].(metricdata.Histogram[int64]); len(d.DataPoints) != 2 {
		t.Fatalf("tablekit.eventual.deliveries: %d series, want 2", len(d.DataPoints))
	}
	handles := named(tm.spans.Ended(), "eventual.Handle")
	kinds := map[string]int{}
	for _, h := range handles {
		kinds[attr(h, "tablekit.intent.kind")]++
	}
	if len(handles) != 26 || kinds["unknown"] != 25 || kinds["index-order"] != 1 {
		t.Fatalf("%d eventual.Handle spans, kinds %v", len(handles), kinds)
	}
}

// TestTelemetryForgedTraceContext: a delivery whose message carries a
// trace context with the sampled flag off is recorded all the same (under
// the SDK's default parent-based sampler such a parent would hide it and
// its handler's operations): its eventual.Handle span is a root, with the
// handler's reads and writes below it. A sampled context is its parent, as
// a Commit's is.
func TestTelemetryForgedTraceContext(t *testing.T) {
	t.Parallel()
	tm := newTelemetry(t)
	r := newRig(t, &eventual.Options{Telemetry: tm.cfg})
	traceID, spanID := hostile.ID(), hostile.ID()[:16]
	forgeIndexIntent(t, r, indexKind.Name(), time.Now(), "00-"+traceID+"-"+spanID+"-00")
	sampledTrace := hostile.ID()
	forgeIndexIntent(t, r, indexKind.Name(), time.Now(), "00-"+sampledTrace+"-"+spanID+"-01")
	w := r.worker(t, nil)
	stop := start(t, w)
	drain(t, w)
	stop()
	spans := tm.spans.Ended()
	handles := named(spans, "eventual.Handle")
	if len(handles) != 2 {
		t.Fatalf("%d eventual.Handle spans, want 2", len(handles))
	}
	var root, joined sdktrace.ReadOnlySpan
	for _, h := range handles {
		switch {
		case !h.Parent().IsValid() && h.SpanContext().TraceID().String() != traceID:
			root = h
		case h.Parent().IsRemote() && h.SpanContext().TraceID().String() == sampledTrace && h.Parent().SpanID().String() == spanID:
			joined = h
		}
	}
	if root == nil || joined == nil {
		t.Fatalf("eventual.Handle spans: parents %v and %v", handles[0].Parent(), handles[1].Parent())
	}
	for _, h := range handles {
		if attr(h, "tablekit.intent.event") != "processed" {
			t.Fatalf("eventual.Handle: %v", h.Attributes())
		}
		var below []string
		for _, s := range spans {
			if s.Parent().SpanID() == h.SpanContext().SpanID() {
				below = append(below, s.Name())
			}
		}
		if got := strings.Join(below, " "); !strings.Contains(got, "table.Get table.Delete") {
			t.Fatalf("below eventual.Handle: %s", got)
		}
	}
}

// TestTelemetryLagFromTheQueue: the consistency lag of intents whose
// messages claim to have been created in year 1 or in 2100 is measured
// from their messages' insertion, as the queue service records it: at
// least 0, and no longer than the test has run (plus the second the
// service rounds insertion times to).
func TestTelemetryLagFromTheQueue(t *testing.T) {
	t.Parallel()
	tm := newTelemetry(t)
	r := newRig(t, &eventual.Options{Telemetry: tm.cfg})
	began := time.Now()
	forgeIndexIntent(t, r, indexKind.Name(), time.Date(1, 6, 1, 0, 0, 0, 0, time.UTC), "")
	forgeIndexIntent(t, r, indexKind.Name(), time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC), "")
	w := r.worker(t, nil)
	stop := start(t, w)
	drain(t, w)
	stop()
	bound := time.Since(began).Seconds() + 1
	lag, _ := tm.metrics(t)["tablekit.eventual.lag"].(metricdata.Histogram[float64])
	if len(lag.DataPoints) != 1 {
		t.Fatalf("lag: %+v", lag)
	}
	dp := lag.DataPoints[0]
	lo, _ := dp.Min.Value()
	hi, _ := dp.Max.Value()
	if dp.Count != 2 || lo < 0 || hi > bound || dp.Sum < 0 || dp.Sum > 2*bound {
		t.Fatalf("lag of 2 intents: count %d, min %v, max %v, sum %v; want each in [0, %v]", dp.Count, lo, hi, dp.Sum, bound)
	}
}
