package obs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/tablekit/tablekit/internal/obs"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// recorder is an SDK tracer provider recording every span, a manual
// metric reader, and a debug logger into a buffer.
type recorder struct {
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
	logs   bytes.Buffer
	cfg    *obs.Config
}

func newRecorder(t *testing.T) *recorder {
	r := &recorder{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	t.Cleanup(func() { tp.Shutdown(context.Background()); mp.Shutdown(context.Background()) })
	r.cfg = &obs.Config{TracerProvider: tp, MeterProvider: mp, Logger: slog.New(slog.NewTextHandler(&r.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	return r
}

func attrs(kvs []attribute.KeyValue) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}

// sums returns the metric's data points as "attr=value,...: sum".
func (r *recorder) sums(t *testing.T, name string) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			if s, ok := m.Data.(metricdata.Sum[int64]); ok {
				for _, dp := range s.DataPoints {
					out[dp.Attributes.Encoded(attribute.DefaultEncoder())] += dp.Value
				}
			}
		}
	}
	return out
}

var (
	opWrite = obs.Write("pkg.Write")
	opRead  = obs.Read("pkg.Read")
)

// TestSpanAttributesAndRedaction: an operation's span carries the table,
// the partition and the outcome; its error is recorded with the URL's
// query string (its signature), the RowKey it names and the account key
// removed, also in the log record; so are the attributes set on it; the
// writes metric counts the outcome by operation.
func TestSpanAttributesAndRedaction(t *testing.T) {
	r := newRecorder(t)
	o := obs.New(r.cfg)
	_, sp := o.Start(context.Background(), opWrite, "tbl", "")
	sp.SetPartition("p1")
	sp.Set(attribute.String("url.full", "http://h/t(PartitionKey='p1',RowKey='rk-SECRET-4711')?sig=SECRETSIG"))
	secret := fmt.Errorf(`table: get tbl (PartitionKey "p1", RowKey "rk-SECRET-4711"): GET http://h/t?sv=1&sig=SECRETSIG%%3D: AccountKey=KEYSECRET; failed`)
	sp.EndWrite(secret, false)
	_, sp = o.Start(context.Background(), opWrite, "tbl", "p2")
	sp.EndWrite(nil, true)

	spans := r.spans.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	a := attrs(spans[0].Attributes())
	if spans[0].Name() != "pkg.Write" || a[obs.KeyTable].AsString() != "tbl" || a[obs.KeyPartition].AsString() != "p1" || a[obs.KeyOutcome].AsString() != obs.NotApplied {
		t.Fatalf("span %s: %v", spans[0].Name(), a)
	}
	if _, ok := a[obs.KeyRoundTrips]; ok {
		t.Fatal("round trips recorded though no client counted them")
	}
	if attrs(spans[1].Attributes())[obs.KeyOutcome].AsString() != obs.Verified {
		t.Fatalf("second span: %v", spans[1].Attributes())
	}
	all := fmt.Sprintf("%v %v %v %v", spans[0].Attributes(), spans[0].Status(), spans[0].Events(), r.logs.String())
	for _, leak := range []string{"SECRETSIG", "KEYSECRET", "SECRET-4711", "?", "sig="} {
		if strings.Contains(all, leak) {
			t.Errorf("recorded %q: %s", leak, all)
		}
	}
	if spans[0].Status().Code != codes.Error || spans[0].Status().Description != `table: get tbl (PartitionKey "…", RowKey "…"): GET http://h/t: AccountKey=REDACTED; failed` ||
		a["url.full"].AsString() != "http://h/t(…)" {
		t.Fatalf("status %q, url.full %q", spans[0].Status().Description, a["url.full"].AsString())
	}
	got := r.sums(t, obs.MetricWrites)
	if got["tablekit.operation=pkg.Write,tablekit.outcome=not_applied"] != 1 || got["tablekit.operation=pkg.Write,tablekit.outcome=verified"] != 1 || len(got) != 2 {
		t.Fatalf("writes: %v", got)
	}
	if !strings.Contains(r.logs.String(), "level=DEBUG msg=pkg.Write tablekit.operation=pkg.Write tablekit.table=tbl tablekit.partition=p1") {
		t.Fatalf("log: %s", r.logs.String())
	}
}

// TestChildCostsNothingUntraced: a core operation under a context without
// a recording span starts no span, and with its end (a write's outcome
// metric on the global, no-op provider) allocates nothing.
func TestChildCostsNothingUntraced(t *testing.T) {
	ctx := context.Background()
	failure := errors.New("x")
	n := testing.AllocsPerRun(1000, func() {
		c, sp := obs.Child(ctx, opWrite, "tbl", "p")
		if sp.Traced() || c != ctx {
			t.Fatal("traced without a recording span")
		}
		sp.EndWrite(nil, false)
		_, sp = obs.Child(ctx, opRead, "tbl", "p")
		sp.End(failure)
	})
	if n != 0 {
		t.Fatalf("%v allocations per untraced operation, want 0", n)
	}
}

// TestChildUnderRecordingSpan: under a recording span, a core operation's
// span is its child, from the parent's provider.
func TestChildUnderRecordingSpan(t *testing.T) {
	r := newRecorder(t)
	ctx, root := obs.New(r.cfg).Tracer().Start(context.Background(), "root")
	_, sp := obs.Child(ctx, opRead, "tbl", "p")
	if !sp.Traced() {
		t.Fatal("not traced under a recording span")
	}
	sp.End(nil)
	root.End()
	spans := r.spans.Ended()
	if len(spans) != 2 || spans[0].Name() != "pkg.Read" || spans[0].Parent().SpanID() != root.SpanContext().SpanID() {
		t.Fatalf("spans: %v", spans)
	}
}

// TestSeq2: an iterator's span covers its iteration and records its first
// error.
func TestSeq2(t *testing.T) {
	r := newRecorder(t)
	o := obs.New(r.cfg)
	seq := obs.Seq2(o, context.Background(), opRead, "tbl", "p", func(ctx context.Context) iter.Seq2[int, error] {
		if !trace.SpanFromContext(ctx).IsRecording() {
			t.Error("the sequence is not made under the span")
		}
		return func(yield func(int, error) bool) {
			_ = yield(1, nil) && yield(0, errors.New("boom")) && yield(2, nil)
		}
	})
	if len(r.spans.Ended()) != 0 {
		t.Fatal("a span before iteration")
	}
	for range seq {
	}
	spans := r.spans.Ended()
	if len(spans) != 1 || spans[0].Status().Description != "boom" {
		t.Fatalf("spans: %v", spans)
	}
}

// TestTraceContextRoundTrip: the trace context injected under a span is
// extracted as a remote parent; invalid or missing values are ignored.
func TestTraceContextRoundTrip(t *testing.T) {
	r := newRecorder(t)
	if tp, ts := obs.Inject(context.Background()); tp != "" || ts != "" {
		t.Fatalf("injected %q %q without a span", tp, ts)
	}
	ctx, span := obs.New(r.cfg).Tracer().Start(context.Background(), "commit")
	tp, _ := obs.Inject(ctx)
	span.End()
	if len(tp) != 55 || !strings.HasPrefix(tp, "00-") {
		t.Fatalf("traceparent %q", tp)
	}
	got := trace.SpanContextFromContext(obs.Extract(context.Background(), tp, ""))
	if !got.IsRemote() || got.TraceID() != span.SpanContext().TraceID() || got.SpanID() != span.SpanContext().SpanID() {
		t.Fatalf("extracted %v", got)
	}
	// An unsampled context (its flags 00) would keep the delivery from
	// being recorded under a parent-based sampler: not a parent.
	unsampled := tp[:len(tp)-2] + "00"
	for _, bad := range []string{"", "garbage", "00-zz-yy-01", strings.Repeat("0", 55), unsampled} {
		if sc := trace.SpanContextFromContext(obs.Extract(context.Background(), bad, "x")); sc.IsValid() {
			t.Fatalf("extracted %v from %q", sc, bad)
		}
	}
}

// TestIntentMetrics: a processed intent counts, with its deliveries and
// its lag; a poisoned one with its deliveries.
func TestIntentMetrics(t *testing.T) {
	r := newRecorder(t)
	o := obs.New(r.cfg)
	ctx := context.Background()
	o.Intent(ctx, "processed", "k", 2, time.Now().Add(-3*time.Second))
	o.Intent(ctx, "poisoned", "k", 5, time.Now())
	o.Intent(ctx, "dropped", "k", 1, time.Now())
	o.Intent(ctx, "processed", "k", 1, time.Time{}) // no start known: no lag
	o.Lease(ctx, true)
	o.Lease(ctx, false)
	if got := r.sums(t, obs.MetricIntents); got["tablekit.intent.event=processed,tablekit.intent.kind=k"] != 2 || got["tablekit.intent.event=poisoned,tablekit.intent.kind=k"] != 1 || got["tablekit.intent.event=dropped,tablekit.intent.kind=k"] != 1 {
		t.Fatalf("intents: %v", got)
	}
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		switch d := m.Data.(type) {
		case metricdata.Histogram[float64]:
			if m.Name == obs.MetricLag && d.DataPoints[0].Count == 1 && d.DataPoints[0].Sum >= 3 {
				seen[m.Name] = true
			}
		case metricdata.Histogram[int64]:
			if m.Name == obs.MetricDeliveries && d.DataPoints[0].Count == 3 && d.DataPoints[0].Sum == 8 {
				seen[m.Name] = true
			}
		case metricdata.Sum[int64]:
			if (m.Name == obs.MetricRenewals || m.Name == obs.MetricLostLeases) && d.DataPoints[0].Value == 1 {
				seen[m.Name] = true
			}
		}
	}
	if len(seen) != 4 {
		t.Fatalf("seen %v in %+v", seen, rm)
	}
}

// TestTracingProviderGated: the azcore tracer of tablekit's clients makes
// spans only under a recording span, in that span's provider, and removes
// secrets from status descriptions.
func TestTracingProviderGated(t *testing.T) {
	r := newRecorder(t)
	tr := obs.TracingProvider().NewTracer("aztables", "v1")
	if !tr.Enabled() {
		t.Fatal("not enabled")
	}
	ctx := context.Background()
	c, s := tr.Start(ctx, "Client.GetEntity", nil)
	s.End()
	if c != ctx || len(r.spans.Ended()) != 0 {
		t.Fatal("a span without a recording parent")
	}
	ctx, root := obs.New(r.cfg).Tracer().Start(ctx, "root")
	entity := "http://127.0.0.1:10002/acct/tbl(PartitionKey='Sales',RowKey='empid%21rk-SECRET-4711')?se=x&sig=SECRETSIG"
	_, s = tr.Start(ctx, "Client.GetEntity", &tracing.SpanOptions{Kind: tracing.SpanKindClient,
		Attributes: []tracing.Attribute{{Key: "http.url", Value: entity}, {Key: "http.status_code", Value: 404}}})
	s.SetAttributes(tracing.Attribute{Key: "url.full", Value: entity})
	s.AddEvent("exception", tracing.Attribute{Key: "exception.message", Value: `get (PartitionKey "Sales", RowKey "rk-SECRET-4711"): GET ` + entity + ": 404"})
	s.SetStatus(tracing.SpanStatusError, "GET "+entity+": refused")
	s.End()
	// The span of an SDK method in progress, as the SDK finds it.
	tr.SpanFromContext(ctx).SetAttributes(tracing.Attribute{Key: "url.full", Value: entity})
	root.End()
	spans := r.spans.Ended()
	if len(spans) != 2 || spans[0].Name() != "Client.GetEntity" || spans[0].Parent().SpanID() != root.SpanContext().SpanID() {
		t.Fatalf("spans: %v", spans)
	}
	a := attrs(spans[0].Attributes())
	want := "http://127.0.0.1:10002/acct/tbl(…)"
	if a["http.url"].AsString() != want || a["url.full"].AsString() != want || a["http.status_code"].AsInt64() != 404 ||
		spans[0].Status().Description != "GET "+want+": refused" || attrs(spans[1].Attributes())["url.full"].AsString() != want {
		t.Fatalf("attributes %v, status %q; root %v", a, spans[0].Status().Description, spans[1].Attributes())
	}
	if ev := fmt.Sprint(spans[0].Events()); strings.Contains(ev, "SECRET") || !strings.Contains(ev, `get (PartitionKey "…", RowKey "…"): GET `+want+": 404") {
		t.Fatalf("events: %s", ev)
	}
}

// TestSanitize: what telemetry records of a text: URLs without their query
// strings and without the path after the resource they address, entity
// predicates and quoted strings elided, signatures and account keys
// redacted; a text with none of these is returned as it is, without
// allocating.
func TestSanitize(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"http://127.0.0.1:10002/devstoreaccount1/tbl(PartitionKey='Sales',RowKey='empid%21rk-SECRET-4711')", "http://127.0.0.1:10002/devstoreaccount1/tbl(…)"},
		{"https://a.table.core.windows.net/tbl(PartitionKey='Sales',RowKey='office%21Seattle%21Sales%21rk-SECRET-4711')", "https://a.table.core.windows.net/tbl(…)"},
		{"https://a.table.core.windows.net/tbl()?$filter=RowKey%20eq%20'rk-SECRET'&sig=S", "https://a.table.core.windows.net/tbl()"},
		{"http://127.0.0.1:10002/devstoreaccount1/$batch?se=REDACTED&sig=REDACTED&sp=raud", "http://127.0.0.1:10002/devstoreaccount1/$batch"},
		{"http://127.0.0.1:10001/devstoreaccount1/q/messages?messagettl=-1&sig=REDACTED", "http://127.0.0.1:10001/devstoreaccount1/q/…"},
		{"https://a.queue.core.windows.net/q/messages/id?popreceipt=P", "https://a.queue.core.windows.net/q/…"},
		{"https://a.blob.core.windows.net/c/Last~rk-SECRET?sig=S", "https://a.blob.core.windows.net/c/…"},
		{"HTTPS://user:pw@a.table.core.windows.net/#frag", "https://a.table.core.windows.net/"},
		{"GET http://h/tbl(PartitionKey='p',RowKey='rk-SECRET'): 404 ResourceNotFound", "GET http://h/tbl(…): 404 ResourceNotFound"},
		{"GET https://h/t(PartitionKey='p',RowKey='rk-SECRET')\n----", "GET https://h/t(…)\n----"},
		{`table: get tbl (PartitionKey "Sales", RowKey "rk-SECRET\"x"): 404 ResourceNotFound`, `table: get tbl (PartitionKey "…", RowKey "…"): 404 ResourceNotFound`},
		{`Get "http://h/t?sig=S": dial tcp: connection refused`, `Get "…": dial tcp: connection refused`},
		{"path /tbl(PartitionKey='a',RowKey='it''s)rk-SECRET') next", "path /tbl(…) next"},
		{"path (PartitionKey='a',RowKey='rk-SECRET", "path (…)"},
		{`an unterminated "quote`, `an unterminated "quote`},
		{"sig=S&AccountKey=K;", "sig=REDACTED&AccountKey=REDACTED;"},
		{"http://", "http://…"},
		{"disk on fire", "disk on fire"},
	} {
		if got := obs.Sanitize(c.in); got != c.want {
			t.Errorf("Sanitize(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { obs.Sanitize("Sales"); obs.Sanitize("table.Get: 404 ResourceNotFound") }); n != 0 {
		t.Fatalf("%v allocations for plain texts", n)
	}
}
