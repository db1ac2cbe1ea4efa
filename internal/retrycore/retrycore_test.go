package retrycore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/retrycore"
)

func TestSleepEndsWithItsContext(t *testing.T) {
	if err := retrycore.Sleep(context.Background(), time.Millisecond); err != nil {
		t.Fatalf("Sleep of a live context: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := retrycore.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep of an ended context: %v", err)
	}
	if err := retrycore.Sleep(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep(0) of an ended context: %v", err)
	}
}
