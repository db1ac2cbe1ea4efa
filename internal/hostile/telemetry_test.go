package hostile_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// telemetryWatch sees everything tablekit's telemetry records while
// TestNoSignatureInErrorsOrLogs runs: as the global tracer provider's span
// processor (every span's name, attributes, events and status, the HTTP
// spans of the SAS clients included), the global meter provider's reader,
// and slog's default logger at debug level; and checks it against every
// signature the test mints, and against the rows' RowKeys (rowKey): no
// span, metric or log record holds one, and no span holds a query string
// (a '?', or "sig=" even redacted).
type telemetryWatch struct {
	mu     sync.Mutex
	sigs   []string
	leaks  []string
	spans  int
	errors int // spans with an error status
	logs   int
}

var watch = &telemetryWatch{}

func (w *telemetryWatch) addSig(sig string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sigs = append(w.sigs, sig)
}

func (w *telemetryWatch) check(what, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if strings.Contains(text, rowKey) {
		w.leaks = append(w.leaks, what+" holds a RowKey: "+text)
		return
	}
	for _, sig := range w.sigs {
		if holds(text, sig) {
			w.leaks = append(w.leaks, what+" holds a signature: "+text)
			return
		}
	}
}

func (w *telemetryWatch) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (w *telemetryWatch) Shutdown(context.Context) error                  { return nil }
func (w *telemetryWatch) ForceFlush(context.Context) error                { return nil }

func (w *telemetryWatch) OnEnd(s sdktrace.ReadOnlySpan) {
	text := fmt.Sprintf("%v %v %v", s.Attributes(), s.Events(), s.Status())
	w.check("span "+s.Name(), text)
	w.mu.Lock()
	defer w.mu.Unlock()
	if strings.Contains(text, "?") || strings.Contains(text, "sig=") {
		w.leaks = append(w.leaks, "span "+s.Name()+" holds a query string: "+text)
	}
	w.spans++
	if s.Status().Description != "" {
		w.errors++
	}
}

// Write takes the text handler's log lines.
func (w *telemetryWatch) Write(p []byte) (int, error) {
	w.check("log", string(p))
	w.mu.Lock()
	defer w.mu.Unlock()
	w.logs++
	return len(p), nil
}

// install makes w see the global providers' spans and metrics and the
// default logger's records until t ends, then checks them.
func (w *telemetryWatch) install(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(w))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	otel.SetTracerProvider(tp)
	otel.SetMeterProvider(mp)
	logger := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() {
		slog.SetDefault(logger)
		otel.SetTracerProvider(noop.NewTracerProvider())
		otel.SetMeterProvider(metricnoop.NewMeterProvider())
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Error(err)
		}
		w.check("metrics", fmt.Sprintf("%+v", rm))
		w.mu.Lock()
		defer w.mu.Unlock()
		// Every row's operations were traced, and many failed.
		if w.spans < 1000 || w.errors < 100 || w.logs < 10 {
			t.Errorf("the watch saw %d spans (%d with an error) and %d log records: too few to mean anything", w.spans, w.errors, w.logs)
		}
		for _, l := range w.leaks {
			t.Errorf("telemetry: %s", l)
		}
		t.Logf("telemetry watched: %d spans (%d with an error), %d log records, %d signatures", w.spans, w.errors, w.logs, len(w.sigs))
	})
}
