package obs

import (
	"context"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/Azure/azure-sdk-for-go/sdk/tracing/azotel"
	"github.com/tablekit/tablekit/internal/redact"
	"go.opentelemetry.io/otel/trace"
)

// TracingProvider returns the azcore tracing provider of tablekit-built
// clients: azotel's adapter of OpenTelemetry, over the tracer provider of
// the span each request is made under, and only under a recording span
// (a tablekit operation's, or the application's). Requests made without
// one (a worker polling an empty queue) make no spans and cost an SDK
// method call a few small allocations.
func TracingProvider() tracing.Provider {
	return tracing.NewProvider(func(name, version string) tracing.Tracer {
		return tracing.NewTracer(func(ctx context.Context, spanName string, o *tracing.SpanOptions) (context.Context, tracing.Span) {
			parent := trace.SpanFromContext(ctx)
			if !parent.IsRecording() {
				return ctx, tracing.Span{}
			}
			ctx, span := azTracer(parent.TracerProvider(), name, version).Start(ctx, spanName, o)
			return ctx, redacting(span)
		}, &tracing.TracerOptions{SpanFromContext: func(ctx context.Context) tracing.Span {
			parent := trace.SpanFromContext(ctx)
			if !parent.IsRecording() {
				return tracing.Span{}
			}
			return azTracer(parent.TracerProvider(), name, version).SpanFromContext(ctx)
		}})
	}, nil)
}

// httpTracer is the azcore tracer tablekit's operations put in their
// context (withHTTPSpans): it makes the span of each HTTP request (kind
// Client, made by azcore's HTTP trace policy, which every azcore pipeline
// has) under a recording span, in that span's provider, and no span for an
// SDK method (kind Internal): the operation's own span stands for it. So
// the requests of queue and blob clients, whose SDKs make no spans of
// their own, are traced too, whatever the client's options.
var httpTracer = tracing.NewTracer(func(ctx context.Context, spanName string, o *tracing.SpanOptions) (context.Context, tracing.Span) {
	parent := trace.SpanFromContext(ctx)
	if o == nil || o.Kind != tracing.SpanKindClient || !parent.IsRecording() {
		return ctx, tracing.Span{}
	}
	ctx, span := azTracer(parent.TracerProvider(), ScopeName, "").Start(ctx, spanName, o)
	return ctx, redacting(span)
}, nil)

// withHTTPSpans returns ctx carrying httpTracer for the requests made with
// it. (runtime.StartSpan is how azcore's pipelines learn their tracer; it
// also marks an SDK method as running, so that the SDK methods called
// with ctx make no spans of their own, only their requests'.)
func withHTTPSpans(ctx context.Context) context.Context {
	ctx, _ = runtime.StartSpan(ctx, "tablekit", httpTracer, nil)
	return ctx
}

// redacting wraps span so that its status descriptions (an SDK method's
// error text, which quotes a transport error's URL) hold no secret.
func redacting(span tracing.Span) tracing.Span {
	return tracing.NewSpan(tracing.SpanImpl{
		End:           span.End,
		SetAttributes: span.SetAttributes,
		AddEvent:      span.AddEvent,
		SetStatus: func(code tracing.SpanStatus, desc string) {
			span.SetStatus(code, redact.Text(desc))
		},
	})
}

// azTracers caches azotel's tracer per OpenTelemetry provider and client.
var azTracers sync.Map

type azKey struct {
	tp            trace.TracerProvider
	name, version string
}

func azTracer(tp trace.TracerProvider, name, version string) tracing.Tracer {
	if !cacheable(tp) {
		return azotel.NewTracingProvider(tp, nil).NewTracer(name, version)
	}
	k := azKey{tp, name, version}
	if t, ok := azTracers.Load(k); ok {
		return t.(tracing.Tracer)
	}
	t, _ := azTracers.LoadOrStore(k, azotel.NewTracingProvider(tp, nil).NewTracer(name, version))
	return t.(tracing.Tracer)
}
