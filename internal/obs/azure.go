package obs

import (
	"context"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/tracing"
	"github.com/Azure/azure-sdk-for-go/sdk/tracing/azotel"
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
			return startSanitized(ctx, azTracer(parent.TracerProvider(), name, version), spanName, o)
		}, &tracing.TracerOptions{SpanFromContext: func(ctx context.Context) tracing.Span {
			parent := trace.SpanFromContext(ctx)
			if !parent.IsRecording() {
				return tracing.Span{}
			}
			return sanitizing(azTracer(parent.TracerProvider(), name, version).SpanFromContext(ctx))
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
	return startSanitized(ctx, azTracer(parent.TracerProvider(), ScopeName, ""), spanName, o)
}, nil)

// withHTTPSpans returns ctx carrying httpTracer for the requests made with
// it. (runtime.StartSpan is how azcore's pipelines learn their tracer; it
// also marks an SDK method as running, so that the SDK methods called
// with ctx make no spans of their own, only their requests'.)
func withHTTPSpans(ctx context.Context) context.Context {
	ctx, _ = runtime.StartSpan(ctx, "tablekit", httpTracer, nil)
	return ctx
}

// startSanitized starts a span of tr whose attributes (those azcore
// gives at its start, such as http.url, included), events and status
// descriptions pass through Sanitize.
func startSanitized(ctx context.Context, tr tracing.Tracer, spanName string, o *tracing.SpanOptions) (context.Context, tracing.Span) {
	if o != nil && len(o.Attributes) > 0 {
		c := *o
		c.Attributes = sanitizeAttrs(o.Attributes)
		o = &c
	}
	ctx, span := tr.Start(ctx, spanName, o)
	return ctx, sanitizing(span)
}

// sanitizing wraps span so that every attribute, event attribute and
// status description set on it passes through Sanitize.
func sanitizing(span tracing.Span) tracing.Span {
	return tracing.NewSpan(tracing.SpanImpl{
		End: span.End,
		SetAttributes: func(attrs ...tracing.Attribute) {
			span.SetAttributes(sanitizeAttrs(attrs)...)
		},
		AddEvent: func(name string, attrs ...tracing.Attribute) {
			span.AddEvent(name, sanitizeAttrs(attrs)...)
		},
		SetStatus: func(code tracing.SpanStatus, desc string) {
			span.SetStatus(code, Sanitize(desc))
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
