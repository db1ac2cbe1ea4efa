package retry_test

import (
	"context"
	"fmt"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/retry"
)

// The range of each of the guide's waits: the jitter is drawn from
// [0.8z, 1.2z), added to the floor and capped at the ceiling.
func ExamplePolicy_Delay() {
	lo, hi := retry.Guide, retry.Guide
	lo.Rand = func() float64 { return 0 }
	hi.Rand = func() float64 { return 1 }
	for x := 1; x <= retry.Guide.MaxRetries; x++ {
		fmt.Printf("retry %d: %v to %v\n", x, lo.Delay(x), hi.Delay(x))
	}
	// Output:
	// retry 1: 27s to 39s
	// retry 2: 1m15s to 1m30s
	// retry 3: 1m30s to 1m30s
	// retry 4: 1m30s to 1m30s
	// retry 5: 1m30s to 1m30s
}

// Install the policy in a client instead of azcore's built-in retry.
func ExamplePolicy_ApplyTo() {
	opts := &aztables.ClientOptions{}
	retry.Default.ApplyTo(&opts.ClientOptions)
	// Then: aztables.NewServiceClientFromConnectionString(connStr, opts)
	fmt.Println("built-in retries:", opts.Retry.MaxRetries)
	// Output:
	// built-in retries: -1
}

// An optimistic-concurrency loop: re-read and retry while the ETag is stale.
func ExamplePolicy_Do() {
	p := retry.Default
	p.Retryable = retry.RetryOn412
	p.FullJitter = true // contention on one entity: spread the clients out

	attempts := 0
	err := p.Do(context.Background(), func(ctx context.Context) error {
		attempts++
		// read the entity and its ETag, change it, write it with If-Match...
		if attempts < 2 {
			// in real code: the 412 returned by the conditional update
			return &azcore.ResponseError{StatusCode: http.StatusPreconditionFailed}
		}
		return nil
	})
	fmt.Println(err, attempts)
	// Output:
	// <nil> 2
}
