package retry_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/retry"
)

// TestCosmosThrottling: throttled requests are retried within the policy's
// backoff and every write applies once. Under the Cosmos DB simulation 30%
// of requests are answered 429 (with Cosmos DB's own body), with and
// without x-ms-retry-after-ms: each retry waited at least the hint, or the
// throttle floor (capped by the policy's Max) without one. On Table
// Storage, which throttles with 503 Server Busy, each write's first
// attempt is answered so: the guide's delays apply.
func TestCosmosThrottling(t *testing.T) {
	t.Parallel()
	testrig.Services(t, func(t *testing.T, r *testrig.Rig) {
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
			busy := func() {} // Table Storage: the next request is answered 503
			if sim := r.Sim(); sim != nil {
				sim.Throttle, sim.RetryAfter = 0.3, hint
			} else {
				busy = func() { r.Faults.Inject(faults.Fault{Status: http.StatusServiceUnavailable, ErrorCode: "ServerBusy"}) }
			}
			for i := range 10 {
				busy()
				if _, err := tb.Insert(ctx, table.Dynamic{PartitionKey: pk, RowKey: fmt.Sprint("i", i)}); err != nil {
					t.Fatalf("insert %d (hint %v): %v", i, hint, err)
				}
			}
			var ops []table.Op
			for i := range 10 {
				ops = append(ops, tb.InsertOp(table.Dynamic{PartitionKey: pk, RowKey: fmt.Sprint("b", i)}))
			}
			busy()
			if _, err := tb.Submit(ctx, table.Atomic(ops...), nil); err != nil {
				t.Fatalf("transaction (hint %v): %v", hint, err)
			}
			busy()
			all, err := table.Collect(tb.Query(ctx, &table.Query{Filter: table.PartitionKey(pk), PageSize: 3}))
			if sim := r.Sim(); sim != nil {
				sim.Throttle = 0
			}
			if err != nil || len(all) != 20 {
				t.Fatalf("query (hint %v): %d entities, %v", hint, len(all), err)
			}
			if len(events) == 0 {
				t.Fatalf("no request was throttled (hint %v)", hint)
			}
			for _, e := range events {
				switch {
				case r.Sim() == nil && (e.StatusCode != http.StatusServiceUnavailable || e.Delay > p.Max):
					t.Fatalf("a retry of status %d waited %v", e.StatusCode, e.Delay)
				case r.Sim() != nil && e.StatusCode != http.StatusTooManyRequests:
					t.Fatalf("a retry of status %d (hint %v)", e.StatusCode, hint)
				case r.Sim() != nil && (hint > 0 && e.Delay < hint || hint == 0 && e.Delay != p.Max):
					t.Fatalf("a 429 (hint %v) waited %v", hint, e.Delay)
				}
			}
			if r.Sim() == nil {
				break // no hints on Table Storage
			}
		}
		how := "503 Server Busy (and 500 Operation Timed Out) retried with the guide's jittered backoff"
		if r.Sim() != nil {
			how = "429 retried within the policy's backoff: x-ms-retry-after-ms honoured (capped by MaxRetryAfter), at least 1 s (ThrottleFloor) without it"
		}
		r.Claim(t, testrig.Capability{Pattern: "retry", Operation: "throttling", How: how})
	})
}
