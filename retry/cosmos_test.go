package retry_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/retry"
)

// TestCosmosThrottling: under the Cosmos DB simulation answering 30% of
// requests 429 (with Cosmos DB's own body), with and without
// x-ms-retry-after-ms, inserts, transactions and queries all go through,
// each write applied once; every retry waited at least the hint, or the
// throttle floor (capped by the policy's Max) without one.
func TestCosmosThrottling(t *testing.T) {
	t.Parallel()
	r := testrig.NewCosmos(t)
	name := testrig.NewTable[table.Dynamic](t, r.Table()).Name()
	ctx := context.Background()
	for _, hint := range []time.Duration{5 * time.Millisecond, 0} {
		var mu sync.Mutex
		var events []retry.Event
		p := retry.Policy{Default: time.Millisecond, Max: 20 * time.Millisecond, MaxRetries: 20}
		p.OnRetry = func(e retry.Event) { mu.Lock(); events = append(events, e); mu.Unlock() }
		o := &aztables.ClientOptions{}
		o.Transport = r.Faults
		p.ApplyTo(&o.ClientOptions)
		tb := testrig.NewTable[table.Dynamic](t, r.TableClient(name, o))
		pk := fmt.Sprint("hint", hint.Milliseconds())
		r.Sim().Throttle, r.Sim().RetryAfter = 0.3, hint
		for i := range 10 {
			if _, err := tb.Insert(ctx, table.Dynamic{PartitionKey: pk, RowKey: fmt.Sprint("i", i)}); err != nil {
				t.Fatalf("insert %d (hint %v): %v", i, hint, err)
			}
		}
		var ops []table.Op
		for i := range 10 {
			ops = append(ops, tb.InsertOp(table.Dynamic{PartitionKey: pk, RowKey: fmt.Sprint("b", i)}))
		}
		if _, err := tb.Submit(ctx, table.Atomic(ops...), nil); err != nil {
			t.Fatalf("transaction (hint %v): %v", hint, err)
		}
		all, err := table.Collect(tb.Query(ctx, &table.Query{Filter: table.PartitionKey(pk), PageSize: 3}))
		r.Sim().Throttle = 0
		if err != nil || len(all) != 20 {
			t.Fatalf("query (hint %v): %d entities, %v", hint, len(all), err)
		}
		if len(events) == 0 {
			t.Fatalf("no request was throttled (hint %v)", hint)
		}
		for _, e := range events {
			if e.StatusCode != http.StatusTooManyRequests {
				t.Fatalf("a retry of status %d (hint %v)", e.StatusCode, hint)
			}
			if hint > 0 && e.Delay < hint || hint == 0 && e.Delay != p.Max {
				t.Fatalf("a 429 (hint %v) waited %v", hint, e.Delay)
			}
		}
		t.Logf("hint %v: %d throttled requests retried", hint, len(events))
	}
	r.Claim(t, testrig.Capability{Pattern: "retry", Operation: "throttling (429)", How: "retried within the policy's backoff: x-ms-retry-after-ms honoured (capped by MaxRetryAfter), at least 1 s without it"})
}
