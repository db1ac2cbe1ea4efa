package table_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
	"github.com/tablekit/tablekit/retry"
)

// fastRetry retries like retry.Default but without the waits, so that
// fault tests spend no time sleeping.
var fastRetry = retry.Policy{Default: time.Millisecond, Max: 2 * time.Millisecond, MaxRetries: 5}

// outcomeFixture is a table seen through a fault-injecting client and
// through a clean one (another writer, and the truth).
type outcomeFixture struct {
	tb    *table.Table[counter]
	ft    *faults.Transport
	other *table.Table[counter]
	raw   *aztables.Client // the faulty client, for raw SDK calls
}

type counter struct {
	table.Meta
	PartitionKey string
	RowKey       string
	N            int64
}

func newOutcomeFixture(t *testing.T) outcomeFixture {
	t.Helper()
	env := tabletest.New(t)
	ft := &faults.Transport{}
	opts := &aztables.ClientOptions{}
	opts.Transport = ft
	fastRetry.ApplyTo(&opts.ClientOptions)
	name := env.Name()
	raw := env.CreateTable(name, opts)
	tb, err := table.New[counter](raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	other, err := table.New[counter](env.TableClient(name, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	return outcomeFixture{tb: tb, ft: ft, other: other, raw: raw}
}

func (f outcomeFixture) stored(t *testing.T, rk string) (counter, bool) {
	t.Helper()
	c, err := value(f.other.Get(context.Background(), "p", rk, nil))
	if errors.Is(err, table.ErrNotFound) {
		return c, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return c, true
}

// increment is one step of the documented optimistic-concurrency loop:
// read the counter "r", add one, write it back conditioned on the ETag.
func (f outcomeFixture) increment(ctx context.Context) (table.Result, error) {
	c, err := value(f.tb.Get(ctx, "p", "r", nil))
	if err != nil {
		return table.Result{}, err
	}
	c.N++
	return f.tb.Update(ctx, c, c.ETag, table.Merge)
}

// writes matches the requests that may change state.
func writes(r *http.Request) bool { return r.Method != http.MethodGet }

// TestLostResponseEveryWriteKind loses the response of the first attempt
// of every kind of write, after the service applied it. The retry policy
// resends; the resend of a non-idempotent write answers 409, 412 or 404.
// The reported outcome must match what is stored, with the round trips
// stated in the package documentation.
func TestLostResponseEveryWriteKind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		name string
		// run performs the write on f.tb with the entity read before.
		run func(f outcomeFixture, before counter) (table.Result, error)
		// exists: whether the entity exists before the write.
		exists bool
		// want is the stored N afterwards (-1: absent).
		want int64
		// verified: a read proved the write applied; unknown: the error is
		// ErrOutcomeUnknown (and its answer's sentinel, also).
		verified, unknown bool
		also              error
		roundTrips        int
	}{
		{name: "insert", run: func(f outcomeFixture, _ counter) (table.Result, error) {
			return f.tb.Insert(ctx, counter{PartitionKey: "p", RowKey: "r", N: 1})
		}, want: 1, verified: true, roundTrips: 3},
		{name: "upsert merge", exists: true, run: func(f outcomeFixture, _ counter) (table.Result, error) {
			return f.tb.Upsert(ctx, counter{PartitionKey: "p", RowKey: "r", N: 7}, table.Merge)
		}, want: 7, roundTrips: 2},
		{name: "upsert replace", run: func(f outcomeFixture, _ counter) (table.Result, error) {
			return f.tb.Upsert(ctx, counter{PartitionKey: "p", RowKey: "r", N: 7}, table.Replace)
		}, want: 7, roundTrips: 2},
		{name: "update merge with ETag", exists: true, run: func(f outcomeFixture, b counter) (table.Result, error) {
			b.N++
			return f.tb.Update(ctx, b, b.ETag, table.Merge)
		}, want: 1, verified: true, roundTrips: 3},
		{name: "update replace with ETag", exists: true, run: func(f outcomeFixture, b counter) (table.Result, error) {
			b.N++
			return f.tb.Update(ctx, b, b.ETag, table.Replace)
		}, want: 1, verified: true, roundTrips: 3},
		{name: "update merge with *", exists: true, run: func(f outcomeFixture, b counter) (table.Result, error) {
			b.N = 5
			return f.tb.Update(ctx, b, azcore.ETagAny, table.Merge)
		}, want: 5, roundTrips: 2},
		{name: "delete with ETag", exists: true, run: func(f outcomeFixture, b counter) (table.Result, error) {
			return table.Result{}, f.tb.Delete(ctx, "p", "r", b.ETag)
		}, want: -1, unknown: true, also: table.ErrNotFound, roundTrips: 3},
		{name: "delete with *", exists: true, run: func(f outcomeFixture, _ counter) (table.Result, error) {
			return table.Result{}, f.tb.Delete(ctx, "p", "r", azcore.ETagAny)
		}, want: -1, unknown: true, also: table.ErrNotFound, roundTrips: 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newOutcomeFixture(t)
			var before counter
			if c.exists {
				if _, err := f.other.Insert(ctx, counter{PartitionKey: "p", RowKey: "r"}); err != nil {
					t.Fatal(err)
				}
				before, _ = f.stored(t, "r")
			}
			f.ft.Reset()
			f.ft.Inject(faults.Fault{Match: writes, LoseResponse: true})
			res, err := c.run(f, before)
			switch {
			case c.unknown:
				if !errors.Is(err, table.ErrOutcomeUnknown) || !errors.Is(err, c.also) {
					t.Fatalf("err = %v; want ErrOutcomeUnknown and %v", err, c.also)
				}
			case err != nil:
				t.Fatalf("err = %v; the write was applied", err)
			case res.Verified != c.verified:
				t.Fatalf("Verified = %v, want %v", res.Verified, c.verified)
			}
			got, ok := f.stored(t, "r")
			if (c.want < 0) == ok || ok && got.N != c.want {
				t.Fatalf("stored %+v (exists %v), want N=%d", got, ok, c.want)
			}
			if err == nil && res.ETag != got.ETag {
				t.Fatalf("Result.ETag %q, stored %q", res.ETag, got.ETag)
			}
			if n := f.ft.Count(); n != c.roundTrips {
				t.Fatalf("%d round trips, want %d", n, c.roundTrips)
			}
		})
	}
}

// TestLostRequestIsResent drops the first attempt before it reaches the
// service (an ambiguous transport error): the resend succeeds and is the
// one applied, with no verification read.
func TestLostRequestIsResent(t *testing.T) {
	t.Parallel()
	f := newOutcomeFixture(t)
	ctx := context.Background()
	f.ft.Inject(faults.Fault{Match: writes, Err: faults.ErrLost})
	res, err := f.tb.Insert(ctx, counter{PartitionKey: "p", RowKey: "r", N: 1})
	if err != nil || res.Verified || f.ft.Count() != 2 {
		t.Fatalf("Insert = %+v, %v after %d round trips", res, err, f.ft.Count())
	}
	before, _ := f.stored(t, "r")
	f.ft.Reset()
	f.ft.Inject(faults.Fault{Match: writes, Err: faults.ErrLost})
	before.N = 2
	if _, err := f.tb.Update(ctx, before, before.ETag, table.Replace); err != nil || f.ft.Count() != 2 {
		t.Fatalf("Update = %v after %d round trips", err, f.ft.Count())
	}
	if got, _ := f.stored(t, "r"); got.N != 2 {
		t.Fatalf("stored N=%d", got.N)
	}
}

// TestLostResponseThenConcurrentWriter interleaves another writer between
// a lost attempt and its resend: the history tells "applied, then
// overwritten" from "never applied, another writer won".
func TestLostResponseThenConcurrentWriter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bump := func(f outcomeFixture) func(*http.Request) bool {
		var once sync.Once
		return func(r *http.Request) bool {
			if r.Method == http.MethodGet {
				return false
			}
			once.Do(func() {
				c, _ := f.stored(t, "r")
				c.N += 100
				if _, err := f.other.Update(ctx, c, c.ETag, table.Merge); err != nil {
					t.Error(err)
				}
			})
			return false // the resend goes through untouched
		}
	}
	t.Run("applied then overwritten", func(t *testing.T) {
		f := newOutcomeFixture(t)
		if _, err := f.other.Insert(ctx, counter{PartitionKey: "p", RowKey: "r"}); err != nil {
			t.Fatal(err)
		}
		before, _ := f.stored(t, "r")
		f.ft.Inject(faults.Fault{Match: writes, LoseResponse: true}, faults.Fault{Match: bump(f)})
		before.N++
		res, err := f.tb.Update(ctx, before, before.ETag, table.Merge)
		if err != nil || !res.Verified || res.ETag != "" {
			t.Fatalf("Update = %+v, %v; want verified, without an ETag (the entity changed since)", res, err)
		}
		if got, _ := f.stored(t, "r"); got.N != 101 {
			t.Fatalf("stored N=%d, want 101", got.N)
		}
	})
	t.Run("never applied, another writer won", func(t *testing.T) {
		f := newOutcomeFixture(t)
		if _, err := f.other.Insert(ctx, counter{PartitionKey: "p", RowKey: "r"}); err != nil {
			t.Fatal(err)
		}
		before, _ := f.stored(t, "r")
		// The first attempt never reaches the service; before the resend,
		// another writer updates the entity.
		f.ft.Inject(faults.Fault{Match: writes, Err: faults.ErrLost}, faults.Fault{Match: bump(f)})
		before.N++
		_, err := f.tb.Update(ctx, before, before.ETag, table.Merge)
		if !errors.Is(err, table.ErrPreconditionFailed) || errors.Is(err, table.ErrOutcomeUnknown) {
			t.Fatalf("Update = %v; want a definite ErrPreconditionFailed", err)
		}
		if got, _ := f.stored(t, "r"); got.N != 100 {
			t.Fatalf("stored N=%d, want 100", got.N)
		}
	})
}

// TestReadModifyWriteNeverAppliesTwice runs the documented optimistic
// concurrency loop (retry.Do with RetryOn412 over Get and Update) with the
// first update's response lost: one logical increment stores +1.
func TestReadModifyWriteNeverAppliesTwice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newOutcomeFixture(t)
	if _, err := f.other.Insert(ctx, counter{PartitionKey: "p", RowKey: "r"}); err != nil {
		t.Fatal(err)
	}
	loop := retry.Policy{MaxRetries: 5, Retryable: retry.RetryOn412}
	f.ft.Inject(faults.Fault{Match: writes, LoseResponse: true})
	err := loop.Do(ctx, func(ctx context.Context) error {
		_, err := f.increment(ctx)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := f.stored(t, "r"); got.N != 1 {
		t.Fatalf("one increment stored N=%d", got.N)
	}

	// The raw SDK through a client with retry's policy: the resend's 412
	// comes back as ErrOutcomeUnknown, which RetryOn412 does not retry.
	f.ft.Inject(faults.Fault{Match: writes, LoseResponse: true})
	attempts := 0
	err = loop.Do(ctx, func(ctx context.Context) error {
		attempts++
		resp, err := f.raw.GetEntity(ctx, "p", "r", nil)
		if err != nil {
			return err
		}
		c, _ := f.stored(t, "r")
		body := fmt.Sprintf(`{"PartitionKey":"p","RowKey":"r","N":"%d","N@odata.type":"Edm.Int64"}`, c.N+1)
		_, err = f.raw.UpdateEntity(ctx, []byte(body), &aztables.UpdateEntityOptions{IfMatch: &resp.ETag, UpdateMode: aztables.UpdateModeMerge})
		return err
	})
	var re *azcore.ResponseError
	if !errors.Is(err, retry.ErrOutcomeUnknown) || !errors.As(err, &re) || re.StatusCode != 412 || attempts != 1 {
		t.Fatalf("raw loop = %v after %d attempts; want ErrOutcomeUnknown around the 412, no second attempt", err, attempts)
	}
	if got, _ := f.stored(t, "r"); got.N != 2 {
		t.Fatalf("stored N=%d, want 2", got.N)
	}
}

// TestConcurrentIncrementsWithLostResponses has 8 writers increment one
// counter 25 times each through the optimistic loop while 40 responses are
// lost at random points. Every increment reported applied is stored, none
// twice: the total lies between the applied count and the applied plus the
// unknown count (an unknown outcome is left to the caller, never retried).
// A write whose every attempt lost its response and that a read found not
// applied fails with the lost connection: the loop retries conflicts only,
// the pipeline's budget was spent.
func TestConcurrentIncrementsWithLostResponses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newOutcomeFixture(t)
	if _, err := f.other.Insert(ctx, counter{PartitionKey: "p", RowKey: "r"}); err != nil {
		t.Fatal(err)
	}
	const writers, each, lost = 8, 25, 40
	for range lost {
		f.ft.Inject(faults.Fault{Match: writes, LoseResponse: true})
	}
	loop := retry.Policy{Default: time.Millisecond, Max: 20 * time.Millisecond, MaxRetries: 100, Retryable: retry.RetryOn412, FullJitter: true}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var applied, verified, unknown, failed int
	errs := make(chan error, writers)
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				var res table.Result
				err := loop.Do(ctx, func(ctx context.Context) (err error) {
					res, err = f.increment(ctx)
					return err
				})
				mu.Lock()
				switch {
				case err == nil:
					applied++
					if res.Verified {
						verified++
					}
				case errors.Is(err, table.ErrOutcomeUnknown):
					unknown++
				case errors.Is(err, faults.ErrLost):
					failed++
				default:
					errs <- err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, _ := f.stored(t, "r")
	t.Logf("%d applied (%d verified after a lost response), %d unknown, %d not applied; stored %d", applied, verified, unknown, failed, got.N)
	if applied+unknown+failed != writers*each || unknown+failed > lost || got.N < int64(applied) || got.N > int64(applied+unknown) {
		t.Fatalf("stored N=%d with %d applied, %d unknown and %d not applied", got.N, applied, unknown, failed)
	}
}

// TestSubmitLostResponses loses the response of a transaction after the
// service applied it, for a transaction of every op kind: the resend fails
// on the op the first attempt already applied, a read settles it, and
// every op is reported applied.
func TestSubmitLostResponses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newOutcomeFixture(t)
	for _, rk := range []string{"u1", "u2", "d1", "d2"} {
		if _, err := f.other.Insert(ctx, counter{PartitionKey: "p", RowKey: rk}); err != nil {
			t.Fatal(err)
		}
	}
	u1, _ := f.stored(t, "u1")
	u2, _ := f.stored(t, "u2")
	d1, _ := f.stored(t, "d1")
	u1.N, u2.N = 1, 2
	mixed := []table.Op{
		f.tb.InsertOp(counter{PartitionKey: "p", RowKey: "i1", N: 1}),
		f.tb.UpsertOp(counter{PartitionKey: "p", RowKey: "s1", N: 1}, table.Merge),
		f.tb.UpsertOp(counter{PartitionKey: "p", RowKey: "s2", N: 1}, table.Replace),
		f.tb.UpdateOp(u1, u1.ETag, table.Merge),
		f.tb.UpdateOp(u2, u2.ETag, table.Replace),
		f.tb.DeleteOp("p", "d1", d1.ETag),
		f.tb.DeleteOp("p", "d2", azcore.ETagAny),
	}
	f.ft.Reset()
	f.ft.Inject(faults.Fault{Match: writes, LoseResponse: true})
	res, err := f.tb.Submit(ctx, table.Atomic(mixed...), nil)
	if err != nil {
		t.Fatalf("Submit = %v; every op was applied", err)
	}
	for i, r := range res.Ops {
		if !r.Applied || !r.Verified {
			t.Fatalf("op %d: %+v", i, r)
		}
	}
	// lost + resend (fails on the insert) + one verification read
	if n := f.ft.Count(); n != 3 {
		t.Fatalf("%d round trips, want 3", n)
	}
	for rk, want := range map[string]int64{"i1": 1, "s1": 1, "s2": 1, "u1": 1, "u2": 2, "d1": -1, "d2": -1} {
		got, ok := f.stored(t, rk)
		if (want < 0) == ok || ok && got.N != want {
			t.Fatalf("%s: stored %+v (exists %v), want %d", rk, got, ok, want)
		}
	}

	// Idempotent ops only (upserts): the resend succeeds, no read needed.
	f.ft.Reset()
	f.ft.Inject(faults.Fault{Match: writes, LoseResponse: true})
	res, err = f.tb.Submit(ctx, table.Atomic(
		f.tb.UpsertOp(counter{PartitionKey: "p", RowKey: "s1", N: 9}, table.Merge),
		f.tb.UpsertOp(counter{PartitionKey: "p", RowKey: "s3", N: 9}, table.Replace)), nil)
	if err != nil || !res.Ops[0].Applied || res.Ops[0].Verified || f.ft.Count() != 2 {
		t.Fatalf("upserts: %+v, %v after %d round trips", res.Ops, err, f.ft.Count())
	}

	// Unconditional deletes only: nothing identifies the first attempt, so
	// the resend's 404 leaves the outcome unknown.
	f.ft.Reset()
	f.ft.Inject(faults.Fault{Match: writes, LoseResponse: true})
	res, err = f.tb.Submit(ctx, []table.Op{f.tb.DeleteOp("p", "s3", azcore.ETagAny)}, nil)
	var be *table.BatchError
	if !errors.Is(err, table.ErrOutcomeUnknown) || !errors.As(err, &be) || be.Unknown != 1 || !errors.Is(res.Ops[0].Err, table.ErrOutcomeUnknown) {
		t.Fatalf("deletes: %+v, %v", res.Ops, err)
	}
}

// TestSubmitCancelledBetweenCommitAndResponse cancels the context after
// the service committed the second of three transactions of a partition
// and before its answer is read: 250 ops report 100 applied, 100 of
// unknown outcome and 50 not applied (never sent), which is what is
// stored.
func TestSubmitCancelledBetweenCommitAndResponse(t *testing.T) {
	t.Parallel()
	f := newOutcomeFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ops := make([]table.Op, 250)
	for i := range ops {
		ops[i] = f.tb.InsertOp(counter{PartitionKey: "p", RowKey: fmt.Sprintf("%03d", i)})
	}
	f.ft.Inject(faults.Fault{Match: faults.BodyContains(`"RowKey":"100"`), LoseResponse: true, AfterServer: cancel})
	res, err := f.tb.Submit(ctx, ops, nil)
	var be *table.BatchError
	if !errors.As(err, &be) || be.Failed != 150 || be.Unknown != 100 || !errors.Is(err, context.Canceled) {
		t.Fatalf("Submit = %v (%+v)", err, be)
	}
	for i, r := range res.Ops {
		switch {
		case i < 100 && !r.Applied,
			i >= 100 && i < 200 && !errors.Is(r.Err, table.ErrOutcomeUnknown),
			i >= 200 && (!errors.Is(r.Err, table.ErrNotApplied) || errors.Is(r.Err, table.ErrOutcomeUnknown)):
			t.Fatalf("op %d: %+v", i, r)
		}
	}
	n := 0
	for _, err := range f.other.Query(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 200 {
		t.Fatalf("%d entities stored, want 200", n)
	}
}

// TestAllAttemptsLost loses the response of every attempt: the client
// never hears from the service, and one read settles the outcome.
func TestAllAttemptsLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newOutcomeFixture(t)
	for range 1 + fastRetry.MaxRetries {
		f.ft.Inject(faults.Fault{Match: writes, LoseResponse: true})
	}
	res, err := f.tb.Insert(ctx, counter{PartitionKey: "p", RowKey: "r", N: 1})
	if err != nil || !res.Verified {
		t.Fatalf("Insert = %+v, %v", res, err)
	}
	// Every attempt dropped before the service: the entity is absent, and
	// an insert cannot tell "never arrived" from "arrived and deleted".
	for range 1 + fastRetry.MaxRetries {
		f.ft.Inject(faults.Fault{Match: writes, Err: faults.ErrLost})
	}
	_, err = f.tb.Insert(ctx, counter{PartitionKey: "p", RowKey: "r2", N: 1})
	if !errors.Is(err, table.ErrOutcomeUnknown) || !errors.Is(err, faults.ErrLost) {
		t.Fatalf("Insert = %v; want ErrOutcomeUnknown", err)
	}
	// A conditional update whose every attempt was dropped: the ETag still
	// matches, so it was certainly not applied.
	before, _ := f.stored(t, "r")
	for range 1 + fastRetry.MaxRetries {
		f.ft.Inject(faults.Fault{Match: writes, Err: faults.ErrLost})
	}
	before.N = 50
	_, err = f.tb.Update(ctx, before, before.ETag, table.Merge)
	if err == nil || errors.Is(err, table.ErrOutcomeUnknown) || !errors.Is(err, faults.ErrLost) {
		t.Fatalf("Update = %v; want a definite failure", err)
	}
	// Cancelled between commit and response: unknown, not verified (the
	// caller's context is over).
	cctx, cancel := context.WithCancel(ctx)
	f.ft.Reset()
	f.ft.Inject(faults.Fault{Match: writes, LoseResponse: true, AfterServer: cancel})
	_, err = f.tb.Insert(cctx, counter{PartitionKey: "p", RowKey: "r3", N: 1})
	if !errors.Is(err, table.ErrOutcomeUnknown) || !errors.Is(err, context.Canceled) || f.ft.Count() != 1 {
		t.Fatalf("Insert = %v after %d round trips", err, f.ft.Count())
	}
	if _, ok := f.stored(t, "r3"); !ok {
		t.Fatal("the insert was committed")
	}
}

// TestCancelledBeforeSending: a write whose context ended before it was
// sent is certainly not applied: the context's error, never
// ErrOutcomeUnknown, and nothing sent.
func TestCancelledBeforeSending(t *testing.T) {
	t.Parallel()
	f := newOutcomeFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := f.tb.Insert(ctx, counter{PartitionKey: "p", RowKey: "r"})
	if !errors.Is(err, context.Canceled) || errors.Is(err, table.ErrOutcomeUnknown) || f.ft.Count() != 0 {
		t.Fatalf("Insert with a cancelled context = %v after %d requests", err, f.ft.Count())
	}
	res, err := f.tb.Submit(ctx, []table.Op{f.tb.InsertOp(counter{PartitionKey: "p", RowKey: "r"})}, nil)
	if !errors.Is(err, context.Canceled) || errors.Is(err, table.ErrOutcomeUnknown) || !errors.Is(res.Ops[0].Err, table.ErrNotApplied) {
		t.Fatalf("Submit with a cancelled context = %v", err)
	}
}

// stragglerTransport holds back the first write attempt (the client sees a
// reset, the request is still on its way), answers the resends 503, and
// releases the held attempt just before or just after the verifying
// fence: a merge conditioned on the same ETag.
type stragglerTransport struct {
	next         *faults.Transport
	beforeFence  bool
	mu           sync.Mutex
	writes       int
	held         *http.Request
	heldBody     []byte
	heldResponse int
}

func (s *stragglerTransport) Do(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet {
		return s.next.Do(r)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	switch {
	case s.writes == 1: // the straggler: held, reset at the client
		s.heldBody, _ = io.ReadAll(r.Body)
		s.held = r.Clone(context.Background())
		return nil, faults.ErrLost
	case s.writes <= 1+fastRetry.MaxRetries: // resends: the service is busy
		return s.next.Do(r) // answered 503 by an injected fault
	}
	// The fence. Release the straggler before or after it.
	release := func() {
		s.held.Body = io.NopCloser(bytes.NewReader(s.heldBody))
		if resp, err := http.DefaultClient.Do(s.held); err == nil {
			s.heldResponse = resp.StatusCode
			resp.Body.Close()
		}
	}
	if s.beforeFence {
		release()
	}
	resp, err := s.next.Do(r)
	if !s.beforeFence {
		release()
	}
	return resp, err
}

// TestStragglerFenced: an update attempt reset at the client may still
// reach the service after the client has read the entity and found its
// ETag unchanged. The read alone proves nothing; the fence (a merge
// conditioned on that ETag) settles it: if the fence applies, the
// straggler can no longer apply (not applied, definite); if the straggler
// got there first, the fence fails and the outcome is unknown. Either way
// the report matches what is stored.
func TestStragglerFenced(t *testing.T) {
	t.Parallel()
	for _, beforeFence := range []bool{false, true} {
		t.Run(fmt.Sprintf("straggler before the fence %v", beforeFence), func(t *testing.T) {
			env := tabletest.New(t)
			ft := &faults.Transport{}
			for range fastRetry.MaxRetries {
				ft.Inject(faults.Fault{Match: writes, Status: 503, ErrorCode: "ServerBusy"})
			}
			st := &stragglerTransport{next: ft, beforeFence: beforeFence}
			opts := &aztables.ClientOptions{}
			opts.Transport = st
			fastRetry.ApplyTo(&opts.ClientOptions)
			name := env.Name()
			other, _ := table.New[counter](env.CreateTable(name, nil), nil)
			tb, _ := table.New[counter](env.TableClient(name, opts), nil)
			ctx := context.Background()
			if _, err := other.Insert(ctx, counter{PartitionKey: "p", RowKey: "r"}); err != nil {
				t.Fatal(err)
			}
			c, _ := value(other.Get(ctx, "p", "r", nil))
			c.N = 1
			_, err := tb.Update(ctx, c, c.ETag, table.Merge)
			got, _ := value(other.Get(ctx, "p", "r", nil))
			if beforeFence {
				if !errors.Is(err, table.ErrOutcomeUnknown) || got.N != 1 || st.heldResponse != http.StatusNoContent {
					t.Fatalf("Update = %v, stored N=%d, straggler answered %d; want unknown, applied", err, got.N, st.heldResponse)
				}
				return
			}
			var re *azcore.ResponseError
			if errors.Is(err, table.ErrOutcomeUnknown) || !errors.As(err, &re) || re.StatusCode != 503 || got.N != 0 || st.heldResponse != http.StatusPreconditionFailed {
				t.Fatalf("Update = %v, stored N=%d, straggler answered %d; want a definite 503, nothing applied", err, got.N, st.heldResponse)
			}
		})
	}
}

// TestHistoryIsSanitized: a reserved.WriteProperty value written by other code
// (here an attempt to inject a property) never reaches a request body.
func TestHistoryIsSanitized(t *testing.T) {
	t.Parallel()
	f := newOutcomeFixture(t)
	ctx := context.Background()
	evil := `abc","IsAdmin":true,"x":"y`
	body := fmt.Sprintf(`{"PartitionKey":"p","RowKey":"r","N":"1","N@odata.type":"Edm.Int64","TkWrites":%q}`, evil)
	if _, err := f.raw.AddEntity(ctx, []byte(body), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.tb.Modify(ctx, "p", "r", func(c *counter) error { c.N++; return nil }, nil); err != nil {
		t.Fatal(err)
	}
	d, _ := table.New[table.Dynamic](f.raw, nil)
	got, err := value(d.Get(ctx, "p", "r", nil))
	if err != nil || got.Properties["IsAdmin"] != nil || got.Properties["x"] != nil || got.Properties["N"] != int64(2) {
		t.Fatalf("stored %+v, %v", got.Properties, err)
	}
}

// TestPlainClientOutcomes: a client built without tablekit's retry policy
// (azcore's own retry, which cannot say whether a resend followed a lost
// response) still never applies a read-modify-write twice: a 412 or 404
// answering a conditional write is verified by a read, and so is a
// transport error.
func TestPlainClientOutcomes(t *testing.T) {
	t.Parallel()
	env := tabletest.New(t)
	ft := &faults.Transport{}
	opts := &aztables.ClientOptions{}
	opts.Transport = ft
	opts.Retry.RetryDelay = time.Millisecond
	opts.Retry.MaxRetryDelay = 2 * time.Millisecond
	name := env.Name()
	other, _ := table.New[counter](env.CreateTable(name, nil), nil)
	tb, _ := table.New[counter](env.TableClient(name, opts), nil)
	ctx := context.Background()
	if _, err := other.Insert(ctx, counter{PartitionKey: "p", RowKey: "r"}); err != nil {
		t.Fatal(err)
	}
	ft.Inject(faults.Fault{Match: writes, LoseResponse: true})
	calls := 0
	if _, err := tb.Modify(ctx, "p", "r", func(c *counter) error { calls++; c.N++; return nil }, nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := value(other.Get(ctx, "p", "r", nil)); got.N != 1 || calls != 1 {
		t.Fatalf("stored N=%d after %d calls of fn; want 1 and 1", got.N, calls)
	}
	// Every attempt of an insert lost (azcore gives up with a transport
	// error): one read finds the insert's identity.
	for range 4 {
		ft.Inject(faults.Fault{Match: writes, LoseResponse: true})
	}
	res, err := tb.Insert(ctx, counter{PartitionKey: "p", RowKey: "r2"})
	if err != nil || !res.Verified {
		t.Fatalf("Insert = %+v, %v", res, err)
	}
	// The same through Submit: the resend's inner 412 is verified.
	cur, _ := value(other.Get(ctx, "p", "r", nil))
	cur.N = 7
	ft.Inject(faults.Fault{Match: writes, LoseResponse: true})
	br, err := tb.Submit(ctx, []table.Op{tb.UpdateOp(cur, cur.ETag, table.Merge)}, nil)
	if err != nil || !br.Ops[0].Applied || !br.Ops[0].Verified {
		t.Fatalf("Submit after a lost response = %+v, %v", br.Ops, err)
	}
	if got, _ := value(other.Get(ctx, "p", "r", nil)); got.N != 7 {
		t.Fatalf("stored N=%d, want 7", got.N)
	}
	// A genuine conflict is still a conflict.
	stale, _ := value(other.Get(ctx, "p", "r", nil))
	if _, err := other.Update(ctx, stale, stale.ETag, table.Merge); err != nil {
		t.Fatal(err)
	}
	_, err = tb.Update(ctx, stale, stale.ETag, table.Merge)
	if !errors.Is(err, table.ErrPreconditionFailed) || errors.Is(err, table.ErrOutcomeUnknown) {
		t.Fatalf("stale Update = %v; want a definite ErrPreconditionFailed", err)
	}
}
