package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/secondaryindex"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
	"github.com/tablekit/tablekit/retry"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// hire is an employee with an office, indexed organisation-wide.
type hire struct {
	Department string `table:",pk"`
	ID         string `table:",rk"`
	Name       string
	Office     string
}

// observability traces one employee insert whose office index lives in
// one organisation-wide partition (an OtherPartition index, kept by a
// worker through a queue), from the write to the worker, with the
// OpenTelemetry SDK's in-memory span recorder, and prints the span tree an
// operator's tracing backend would show.
func (t *tour) observability(ctx context.Context) error {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.WithoutCancel(ctx)) //nolint:errcheck // an in-memory recorder
	// Options.Telemetry takes the providers; nil would mean the global
	// ones (otel.SetTracerProvider), which a program wires to its exporter.
	tel := &table.Telemetry{TracerProvider: tp}

	intents, cleanIntents, err := tabletest.ScratchQueue(ctx, "tourtrace")
	if err != nil {
		return err
	}
	defer cleanIntents()
	poison, cleanPoison, err := tabletest.ScratchQueue(ctx, "tourtracepoison")
	if err != nil {
		return err
	}
	defer cleanPoison()
	client := table.NewClient(t.svc, t.name)
	q, err := eventual.New(intents, poison, &eventual.Options{Tables: []*aztables.Client{client}, Telemetry: tel})
	if err != nil {
		return err
	}
	tbl, err := table.New[table.Dynamic](client, nil)
	if err != nil {
		return err
	}
	staff, err := secondaryindex.New(tbl, &secondaryindex.Options[hire]{
		Primary: "hire",
		Indexes: []secondaryindex.Index[hire]{{
			Name: "office", Where: secondaryindex.OtherPartition, Holds: secondaryindex.KeysOnly,
			On:        []string{"Office"},
			Partition: func(string) string { return "offices" }, // one partition for the whole organisation
		}},
		Queue: q, Telemetry: tel,
	})
	if err != nil {
		return err
	}

	// The application's request, then the insert under it.
	reqCtx, req := tp.Tracer("tour").Start(ctx, "POST /employees")
	_, err = staff.Insert(reqCtx, hire{Department: "Research", ID: "000777", Name: "Ana Silva", Office: "Lisbon"})
	req.End()
	if err != nil {
		return err
	}
	// The worker, in this process here; any other process works the same:
	// the intent's message carries the trace context.
	w, err := eventual.NewWorker(q, []eventual.Handler{staff.Handler()}, &eventual.WorkerOptions{Idle: &retry.Policy{Default: 20 * time.Millisecond, Max: 200 * time.Millisecond}, Telemetry: tel})
	if err != nil {
		return err
	}
	if err := drained(ctx, w); err != nil {
		return err
	}
	var found []string
	for e, err := range staff.Find(ctx, "", "office", "Lisbon", nil) {
		if err != nil {
			return err
		}
		found = append(found, e.Value.Name)
	}

	tree := spanTree(rec.Ended(), req.SpanContext())
	t.say("one trace of %d spans from the request to the worker's index copy (the worker's span is a child", len(tree))
	t.say("of the commit's (eventual.Apply here), through the traceparent in the intent's message; the first read is the commit record's):")
	for _, line := range tree {
		t.say("  %s", line)
	}
	t.say("Find office Lisbon (organisation-wide, pk \"\"): %v, once the worker ran", found)
	t.say("without an SDK (the default no-op providers) the same calls record nothing: see docs/observability.md")
	return nil
}

// spanTree renders the spans of root's trace as an indented tree, children
// in start order, with the attributes an operator reads first.
func spanTree(spans []sdktrace.ReadOnlySpan, root trace.SpanContext) []string {
	slices.SortFunc(spans, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	show := map[string]string{"tablekit.partition": "pk", "tablekit.round_trips": "round trips", "tablekit.outcome": "",
		"tablekit.intent.event": "", "tablekit.intent.deliveries": "delivery", "http.status_code": ""}
	var out []string
	var walk func(parent trace.SpanID, depth int)
	walk = func(parent trace.SpanID, depth int) {
		for _, s := range spans {
			if s.Parent().SpanID() != parent || s.SpanContext().TraceID() != root.TraceID() {
				continue
			}
			var attrs []string
			for _, kv := range s.Attributes() {
				if label, ok := show[string(kv.Key)]; ok {
					if label != "" {
						label += " "
					}
					attrs = append(attrs, label+kv.Value.Emit())
				}
			}
			line := strings.Repeat("  ", depth) + s.Name()
			if len(attrs) > 0 {
				line += " (" + strings.Join(attrs, ", ") + ")"
			}
			out = append(out, fmt.Sprintf("%-72s %6.1f ms", line, float64(s.EndTime().Sub(s.StartTime()).Microseconds())/1000))
			walk(s.SpanContext().SpanID(), depth+1)
		}
	}
	walk(root.SpanID(), 1)
	return append([]string{"POST /employees (the application's span)"}, out...)
}
