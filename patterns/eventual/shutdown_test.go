package eventual_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/patterns/eventual"
)

// Not parallel, so that noLeaks sees only this test's workers.
func TestGracefulShutdownAndNoLeaks(t *testing.T) {
	r := newRig(t, nil)
	ctx := context.Background()
	k := eventual.NewKind[string]("block")
	entered := make(chan string, 2)
	finish := make(chan struct{})
	h := k.Handle(func(hctx context.Context, in eventual.Intent[string]) error {
		entered <- in.Payload
		if in.Payload == "finishes" {
			<-finish // outlives Run's context, not the grace period
			return nil
		}
		<-hctx.Done() // outlives the grace period
		return hctx.Err()
	})
	var processed []string
	opts := workerOptions()
	opts.VisibilityTimeout = 30 * time.Second
	opts.Grace = time.Second
	opts.OnEvent = func(e eventual.Event) {
		if e.Type == eventual.Processed {
			processed = append(processed, e.ID)
		}
	}
	w, err := eventual.NewWorker(r.q, []eventual.Handler{h}, opts)
	if err != nil {
		t.Fatal(err)
	}
	fin, err := r.q.Enqueue(ctx, k.New("finishes"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.q.Enqueue(ctx, k.New("hangs")); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	<-entered
	<-entered
	cancel()      // stop: no more dequeues; the handlers keep running
	close(finish) // one finishes in the grace period, the other does not
	if err := <-done; err != nil {
		t.Fatalf("Run after a graceful stop: %v", err)
	}
	noLeaks(t)
	if len(processed) != 1 || processed[0] != fin.ID {
		t.Fatalf("processed %v, want only the intent that finished", processed)
	}
	// The unfinished intent's message was not deleted, and is visible at
	// once (not after its 30 s lease) for another worker.
	peek, err := r.queue.PeekMessages(ctx, &azqueue.PeekMessagesOptions{NumberOfMessages: ptrTo(int32(32))})
	if err != nil || len(peek.Messages) != 1 {
		t.Fatalf("visible messages after the stop: %d, %v; want the unfinished one", len(peek.Messages), err)
	}
}

func TestRunStopsOnMissingQueue(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	if _, err := r.queue.Delete(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	w := r.worker(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := w.Run(ctx)
	if err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run on a deleted queue: %v, want its error", err)
	}
}

func ptrTo[V any](v V) *V { return &v }
