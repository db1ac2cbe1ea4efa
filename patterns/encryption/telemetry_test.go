package encryption_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/encryption"
	"github.com/tablekit/tablekit/patterns/table"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// TestTelemetryCarriesNoPlaintext: with an SDK tracer and meter and a
// debug logger, every operation of an encrypted Table (and the core's and
// the requests' spans below them), succeeding, refused before the network
// (a filter on an encrypted field, holding its plaintext), failing with
// 500s and transport errors, and after a lost response, records no
// plaintext of an encrypted field in any span attribute, event, status,
// metric or log line.
func TestTelemetryCarriesNoPlaintext(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	var logs lockedBuffer
	tel := &table.Telemetry{TracerProvider: tp, MeterProvider: mp, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}

	r := testrig.New(t)
	o := r.TableOptions()
	o.TracingProvider = table.ClientOptions().TracingProvider
	tbl := testrig.NewTable[table.Dynamic](t, r.Env.Table(o))
	eo := &encryption.Options{Indexes: []encryption.Index{{Field: "Email", Normalize: encryption.TrimLower}, {Field: "SSN", Property: "SSNIndex"}}, IndexKey: key("index"), Telemetry: tel}
	p, err := encryption.New[Person](tbl, keysOf(t, "k1", "k1"), secret, eo)
	if err != nil {
		t.Fatal(err)
	}
	ctx, root := tp.Tracer("test").Start(context.Background(), "root")
	a := alice()
	ops := func() {
		res, _ := p.Insert(ctx, a)
		p.Get(ctx, a.PartitionKey, a.RowKey, nil)
		a.Meta = table.Meta{}
		p.Update(ctx, a, res.ETag, table.Replace)
		p.Upsert(ctx, a, table.Merge)
		p.Modify(ctx, a.PartitionKey, a.RowKey, func(v *Person) error { v.SSN = "987-65-4321"; return nil }, &table.ModifyOptions{Retry: &testrig.Fast})
		for range p.Find(ctx, "Sales", "Email", a.Email) {
		}
		for range p.Query(ctx, &table.Query{Filter: table.Eq("SSN", a.SSN)}) { // refused: it holds the plaintext
		}
		for range p.QueryEntities(ctx, &table.Query{Filter: table.PartitionKey("Sales")}) {
		}
		p.QueryPage(ctx, &table.Query{Filter: table.Eq("Email", a.Email)})
		p.Reencrypt(ctx, nil)
		p.Delete(ctx, a.PartitionKey, a.RowKey, azcore.ETagAny)
	}
	ops()
	for _, f := range []faults.Fault{{Status: http.StatusInternalServerError, ErrorCode: "InternalError"}, {Err: syscall.ECONNRESET}, {LoseResponse: true}} {
		r.Faults.Reset()
		for range 100 {
			r.Faults.Inject(f)
		}
		ops()
	}
	root.End()

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, s := range rec.Ended() {
		fmt.Fprintf(&all, "%s %v %v %v\n", s.Name(), s.Attributes(), s.Events(), s.Status())
	}
	fmt.Fprintf(&all, "%+v\n", rm)
	logs.mu.Lock()
	all.WriteString(logs.b.String())
	logs.mu.Unlock()
	text := all.String()
	if n := len(rec.Ended()); n < 100 || !strings.Contains(text, "encryption.Find") || !strings.Contains(text, "HTTP GET") {
		t.Fatalf("only %d spans recorded", n)
	}
	noPlaintext(t, text, "Alice@Contoso.com", "alice@contoso.com", "123-45-6789", "987-65-4321", "vip")
}
