package buckets_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/bucketkey"
	"github.com/tablekit/tablekit/internal/reserved"

	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/buckets"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

func TestMain(m *testing.M) { tabletest.Main(m) }

// access is the guide's example: an employee's access to a resource, in a
// partition per hour (the hot partition of the append anti-pattern). Hour
// and Key are its logical keys.
type access struct {
	Hour     string `table:",pk"`
	Key      string `table:",rk"`
	Employee string
	Resource string
}

func newTable(t *testing.T) (*table.Table[access], *faults.Transport) {
	t.Helper()
	return newTableOn(t, testrig.New(t))
}

// newTableOn is newTable on rig r (one of testrig.Services').
func newTableOn(t *testing.T, r *testrig.Rig) (*table.Table[access], *faults.Transport) {
	t.Helper()
	tb := testrig.NewTable[access](t, r.Table())
	r.Faults.Reset()
	return tb, r.Faults
}

func newSpread(t *testing.T, tb *table.Table[access], opts *buckets.Options) *buckets.Spread[access] {
	t.Helper()
	s, err := buckets.New(tb, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// rk is an access's RowKey: the employee, then the time in ticks.
func rk(emp int, at time.Time) string {
	return keys.Join(keys.Pad(uint64(emp), 6), keys.Pad(uint64(keys.Ticks(at)), 19))
}

func rangeKeys(t *testing.T, s *buckets.Spread[access], pk, from, to string) []string {
	t.Helper()
	var out []string
	for e, err := range s.Range(context.Background(), pk, from, to, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if e.PartitionKey != pk {
			t.Fatalf("entry of logical partition %q from Range(%q)", e.PartitionKey, pk)
		}
		out = append(out, e.RowKey)
	}
	return out
}

// TestSpreadAndMerge: 200 inserts into one logical partition land in all 8
// buckets, one round trip each; Range reads the 8 buckets (one round trip
// each) and yields exactly the sorted keys; a key range is exact.
func TestSpreadAndMerge(t *testing.T) {
	t.Parallel()
	tb, ft := newTable(t)
	s := newSpread(t, tb, nil)
	ctx := context.Background()
	hour := "2014-07-31T18"
	base := time.Date(2014, 7, 31, 18, 0, 0, 0, time.UTC)
	var want []string
	parts := map[string]int{}
	for i := range 200 {
		k := rk(i%37, base.Add(time.Duration(i)*time.Second))
		res, err := s.Insert(ctx, access{Hour: hour, Key: k, Employee: fmt.Sprint(i % 37), Resource: "door"})
		if err != nil {
			t.Fatal(err)
		}
		parts[res.Partition]++
		want = append(want, k)
	}
	if n := ft.Count(); n != 200 {
		t.Fatalf("%d round trips for 200 inserts", n)
	}
	if len(parts) != 8 {
		t.Fatalf("inserts went to %d partitions, want %d: %v", len(parts), 8, parts)
	}
	for p, n := range parts {
		if n < 10 {
			t.Fatalf("bucket %s holds %d of 200: not spread", p, n)
		}
	}
	slices.Sort(want)
	ft.Reset()
	if got := rangeKeys(t, s, hour, "", ""); !slices.Equal(got, want) {
		t.Fatalf("Range: %d keys, want the %d sorted", len(got), len(want))
	}
	if n := ft.Count(); n != 8 {
		t.Fatalf("Range: %d round trips, want one per bucket (%d)", n, 8)
	}
	lo, hi := want[50], want[120]
	if got := rangeKeys(t, s, hour, lo, hi); !slices.Equal(got, want[50:120]) {
		t.Fatalf("Range [%s, %s): %d keys, want 70", lo, hi, len(got))
	}
	// One employee's accesses: a prefix range, in time order.
	plo, phi := keys.PrefixRange(keys.Pad(5, 6))
	got := rangeKeys(t, s, hour, plo, phi)
	if len(got) == 0 || !slices.IsSorted(got) {
		t.Fatalf("employee 5: %v", got)
	}
	// Other logical partitions are never read.
	if got := rangeKeys(t, s, "2014-07-31T19", "", ""); len(got) != 0 {
		t.Fatalf("another hour: %d entries", len(got))
	}
	// Get: one point query in the key's bucket.
	ft.Reset()
	e, err := s.Get(ctx, hour, want[7])
	if err != nil || e.RowKey != want[7] || e.Partition != bucketkey.Partition(hour, 8, int(keys.Bucket(want[7], 8)[0]-'0')) || ft.Count() != 1 {
		t.Fatalf("Get = %+v, %v in %d round trips", e, err, ft.Count())
	}
	if _, err := s.Get(ctx, hour, "nope"); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("Get of a missing key = %v", err)
	}
	// Insert of an existing key: its bucket says so.
	if _, err := s.Insert(ctx, access{Hour: hour, Key: want[3]}); !errors.Is(err, table.ErrAlreadyExists) {
		t.Fatalf("duplicate Insert = %v", err)
	}
}

// TestChangeN: entities written under 1 (one hot partition), then 4, then
// 8 buckets, then 2, stay readable by Range and Get when the earlier counts
// are listed; without them, shrinking hides entities (the reason for
// Earlier), and Get misses the entities of other counts.
func TestChangeN(t *testing.T) {
	t.Parallel()
	tb, ft := newTable(t)
	ctx := context.Background()
	pk := "hot"
	var all []string
	write := func(s *buckets.Spread[access], from, n int) {
		for i := from; i < from+n; i++ {
			k := keys.Pad(uint64(i), 5)
			if _, err := s.Insert(ctx, access{Hour: pk, Key: k, Employee: k}); err != nil {
				t.Fatal(err)
			}
			all = append(all, k)
		}
	}
	write(newSpread(t, tb, &buckets.Options{Buckets: 1}), 0, 30)
	write(newSpread(t, tb, &buckets.Options{Buckets: 4, Earlier: []int{1}}), 30, 30)
	write(newSpread(t, tb, &buckets.Options{Buckets: 8, Earlier: []int{4, 1}}), 60, 30)
	now := newSpread(t, tb, &buckets.Options{Buckets: 2, Earlier: []int{8, 4, 1}})
	write(now, 90, 30)
	if got := now.Partitions(pk); len(got) != 9 || got[0] != "hot" || got[8] != "hot!007" {
		t.Fatalf("Partitions = %v", got)
	}
	if got := rangeKeys(t, now, pk, "", ""); !slices.Equal(got, all) {
		t.Fatalf("Range with every earlier count: %d of %d", len(got), len(all))
	}
	for _, k := range all {
		ft.Reset()
		e, err := now.Get(ctx, pk, k)
		if err != nil || e.Value.Employee != k {
			t.Fatalf("Get %s = %+v, %v", k, e, err)
		}
		if n := ft.Count(); n < 1 || n > 4 {
			t.Fatalf("Get %s: %d round trips, want 1 to 4 (one per count)", k, n)
		}
	}
	// Keys written under the current count are found in one round trip.
	ft.Reset()
	if _, err := now.Get(ctx, pk, all[100]); err != nil || ft.Count() != 1 {
		t.Fatalf("Get of a current key: %v in %d round trips", err, ft.Count())
	}
	// Forgetting the earlier counts hides entities: that is what Earlier
	// is for.
	forgetful := newSpread(t, tb, &buckets.Options{Buckets: 2})
	if got := rangeKeys(t, forgetful, pk, "", ""); len(got) >= len(all) {
		t.Fatalf("Range without Earlier saw %d of %d: the test shows nothing", len(got), len(all))
	}
	missed := 0
	for _, k := range all {
		if _, err := forgetful.Get(ctx, pk, k); errors.Is(err, table.ErrNotFound) {
			missed++
		}
	}
	if missed == 0 {
		t.Fatal("Get without Earlier found everything: the test shows nothing")
	}
}

// TestLostResponseAndConcurrentWriters: a lost insert response is settled
// (stored once, reported applied); 8 writers x 100 inserts with a quarter
// of the responses lost end with every entity stored exactly once.
func TestLostResponseAndConcurrentWriters(t *testing.T) {
	t.Parallel()
	tb, ft := newTable(t)
	s := newSpread(t, tb, &buckets.Options{Buckets: 4})
	ctx := context.Background()
	post := func(r *http.Request) bool { return r.Method == http.MethodPost }
	ft.Inject(faults.Fault{Match: post, LoseResponse: true})
	res, err := s.Insert(ctx, access{Hour: "p", Key: "k0"})
	if err != nil || !res.Verified {
		t.Fatalf("Insert with its response lost = %+v, %v", res, err)
	}
	for range 200 {
		ft.Inject(faults.Fault{Match: post, LoseResponse: true})
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				if _, err := s.Insert(ctx, access{Hour: "p", Key: fmt.Sprintf("w%d-%03d", w, i)}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got := rangeKeys(t, s, "p", "", "")
	if len(got) != 801 || !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != 801 {
		t.Fatalf("%d entities stored (sorted %v), want 801 distinct", len(got), slices.IsSorted(got))
	}
}

// TestTimeDerivedBucket: a Bucket function of the RowKey's ticks; Get
// finds each entity in one round trip, Range merges in order; a function
// answering outside [0, n) is refused before the network.
func TestTimeDerivedBucket(t *testing.T) {
	t.Parallel()
	tb, ft := newTable(t)
	byTicks := func(rk string, n int) int {
		if len(rk) < 19 {
			return -1
		}
		ticks, err := keys.ParsePad(rk[:19], 19)
		if err != nil {
			return -1
		}
		return int(ticks % uint64(n))
	}
	s := newSpread(t, tb, &buckets.Options{Buckets: 4, Bucket: byTicks})
	ctx := context.Background()
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var want []string
	parts := map[string]bool{}
	for i := range 16 {
		k := keys.Pad(uint64(keys.Ticks(base.Add(time.Duration(i)*100))), 19)
		res, err := s.Insert(ctx, access{Hour: "ticks", Key: k})
		if err != nil {
			t.Fatal(err)
		}
		parts[res.Partition] = true
		want = append(want, k)
	}
	if len(parts) != 4 {
		t.Fatalf("ticks spread over %d buckets", len(parts))
	}
	ft.Reset()
	for _, k := range want {
		if _, err := s.Get(ctx, "ticks", k); err != nil {
			t.Fatal(err)
		}
	}
	if n := ft.Count(); n != len(want) {
		t.Fatalf("%d round trips for %d Gets", n, len(want))
	}
	if got := rangeKeys(t, s, "ticks", "", ""); !slices.Equal(got, want) {
		t.Fatalf("Range = %v", got)
	}
	ft.Reset()
	if _, err := s.Insert(ctx, access{Hour: "ticks", Key: "not-ticks-at-all-xx"}); !errors.Is(err, buckets.ErrInvalid) {
		t.Fatalf("Bucket answering -1: %v", err)
	}
	if err := s.InsertOp(access{Hour: "ticks", Key: "not-ticks-at-all-xx"}).Err(); !errors.Is(err, buckets.ErrInvalid) {
		t.Fatalf("InsertOp with Bucket answering -1: %v", err)
	}
	if n := ft.Count(); n != 0 {
		t.Fatalf("%d requests sent for refused inserts", n)
	}
}

// TestInsertOpSubmit: 250 appends as ops go to Submit in one transaction
// per bucket per 100 entities.
func TestInsertOpSubmit(t *testing.T) {
	t.Parallel()
	tb, ft := newTable(t)
	s := newSpread(t, tb, &buckets.Options{Buckets: 4})
	var ops []table.Op
	for i := range 250 {
		op := s.InsertOp(access{Hour: "batch", Key: keys.Pad(uint64(i), 4)})
		if err := op.Err(); err != nil {
			t.Fatal(err)
		}
		ops = append(ops, op)
	}
	res, err := tb.Submit(context.Background(), ops, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Transactions < 4 || res.Transactions > 8 || ft.Count() != res.Transactions {
		t.Fatalf("%d transactions in %d round trips for 250 ops over 4 buckets", res.Transactions, ft.Count())
	}
	if got := rangeKeys(t, s, "batch", "", ""); len(got) != 250 {
		t.Fatalf("%d stored", len(got))
	}
}

// TestInvalidSendsNothing: bad configurations and requests fail with
// sentinels before the network.
func TestInvalidSendsNothing(t *testing.T) {
	t.Parallel()
	tb, ft := newTable(t)
	ctx := context.Background()
	for _, o := range []*buckets.Options{{Buckets: -1}, {Buckets: buckets.MaxBuckets + 1}, {Earlier: []int{0}}, {Concurrency: -2}} {
		if _, err := buckets.New(tb, o); !errors.Is(err, buckets.ErrInvalid) {
			t.Errorf("New(%+v) = %v", o, err)
		}
	}
	if _, err := buckets.New[access](nil, nil); !errors.Is(err, buckets.ErrInvalid) {
		t.Errorf("New(nil) = %v", err)
	}
	s := newSpread(t, tb, nil)
	if _, err := s.Insert(ctx, access{Hour: "", Key: "k"}); !errors.Is(err, table.ErrInvalidKey) {
		t.Errorf("Insert with an empty PartitionKey = %v", err)
	}
	if _, err := s.Insert(ctx, access{Hour: "p", Key: "bad/key"}); !errors.Is(err, table.ErrInvalidKey) {
		t.Errorf("Insert with an invalid RowKey = %v", err)
	}
	if _, err := s.Get(ctx, "", "k"); !errors.Is(err, table.ErrInvalidKey) {
		t.Errorf("Get with an empty PartitionKey = %v", err)
	}
	for _, err := range s.Range(ctx, "p", "b", "a", nil) {
		if !errors.Is(err, buckets.ErrInvalid) {
			t.Errorf("Range backwards = %v", err)
		}
	}
	for _, err := range s.Range(ctx, "", "", "", nil) {
		if !errors.Is(err, table.ErrInvalidKey) {
			t.Errorf("Range of an empty PartitionKey = %v", err)
		}
	}
	// Any logical PartitionKey is escaped into valid bucket partitions.
	if n := ft.Count(); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
	if _, err := s.Insert(ctx, access{Hour: "dept/sales #1", Key: "k"}); err != nil {
		t.Fatalf("a PartitionKey with reserved characters: %v", err)
	}
	if got := rangeKeys(t, s, "dept/sales #1", "", ""); len(got) != 1 {
		t.Fatalf("Range of an escaped PartitionKey: %v", got)
	}
}

// TestKeyErrors: invalid keys fail every operation with both ErrInvalid
// and table.ErrInvalidKey, before the network: an empty logical
// PartitionKey, one whose bucket partitions would be too long (also for
// Range, whose filters would otherwise match nothing), a RowKey the
// service refuses.
func TestKeyErrors(t *testing.T) {
	t.Parallel()
	tb, ft := newTable(t)
	s := newSpread(t, tb, nil)
	ctx := context.Background()
	long := strings.Repeat("p", 1021) // fits a key, not with "!007"
	second := func(_ any, err error) error { return err }
	errs := map[string]error{
		"Insert, empty PartitionKey":    second(s.Insert(ctx, access{Hour: "", Key: "k"})),
		"Insert, '/' in the RowKey":     second(s.Insert(ctx, access{Hour: "p", Key: "bad/key"})),
		"Insert, a long PartitionKey":   second(s.Insert(ctx, access{Hour: long, Key: "k"})),
		"InsertOp, '#' in the RowKey":   s.InsertOp(access{Hour: "p", Key: "a#b"}).Err(),
		"Get, empty PartitionKey":       second(s.Get(ctx, "", "k")),
		"Get, a control character":      second(s.Get(ctx, "p", "k\x01")),
		"Insert, reserved PartitionKey": second(s.Insert(ctx, access{Hour: reserved.Prefix + "p", Key: "k"})),
		"Insert, reserved RowKey":       second(s.Insert(ctx, access{Hour: "p", Key: reserved.Prefix + "k"})),
		"InsertOp, reserved RowKey":     s.InsertOp(access{Hour: "p", Key: reserved.Prefix + "k"}).Err(),
		"Get, reserved RowKey":          second(s.Get(ctx, "p", reserved.Prefix+"k")),
	}
	for _, pk := range []string{"", long} {
		for _, err := range s.Range(ctx, pk, "", "", nil) {
			errs["Range, PartitionKey of "+strconv.Itoa(len(pk))] = err
		}
	}
	for what, err := range errs {
		if !errors.Is(err, buckets.ErrInvalid) || !errors.Is(err, table.ErrInvalid) || !errors.Is(err, table.ErrInvalidKey) {
			t.Errorf("%s: %v, want ErrInvalid, table.ErrInvalid and table.ErrInvalidKey", what, err)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error text of several lines: %q", what, err)
		}
	}
	if n := ft.Count(); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}

// TestNilOptions: New(tbl, nil) is a Spread with the defaults: 8 buckets,
// the hash of the RowKey, one query per bucket.
func TestNilOptions(t *testing.T) {
	t.Parallel()
	tb, ft := newTable(t)
	s, err := buckets.New(tb, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := s.Insert(ctx, access{Hour: "h", Key: "k", Employee: "1"})
	if err != nil {
		t.Fatal(err)
	}
	if want := bucketkey.Partition("h", 8, int(keys.Bucket("k", 8)[0]-'0')); res.Partition != want {
		t.Fatalf("stored in %s, want %s", res.Partition, want)
	}
	ft.Reset()
	if got := rangeKeys(t, s, "h", "", ""); !slices.Equal(got, []string{"k"}) || ft.Count() != 8 {
		t.Fatalf("Range = %v in %d round trips", got, ft.Count())
	}
}

// TestEnvelope: Get and Range return the entity's logical keys (in the
// envelope and in T's key fields), the ETag read and the bucket partition;
// the ETag and partition address the row in the table package; a value
// read is inserted again as it is (copying to another count).
func TestEnvelope(t *testing.T) {
	t.Parallel()
	tb, _ := newTable(t)
	s := newSpread(t, tb, &buckets.Options{Buckets: 4})
	ctx := context.Background()
	res, err := s.Insert(ctx, access{Hour: "hot", Key: "k1", Employee: "7"})
	if err != nil {
		t.Fatal(err)
	}
	e, err := s.Get(ctx, "hot", "k1")
	if err != nil {
		t.Fatal(err)
	}
	want := access{Hour: "hot", Key: "k1", Employee: "7"}
	if e.PartitionKey != "hot" || e.RowKey != "k1" || e.Partition != res.Partition || e.ETag != res.ETag || e.Value != want {
		t.Fatalf("Get = %+v, want %+v in %s with ETag %s", e, want, res.Partition, res.ETag)
	}
	for r, err := range s.Range(ctx, "hot", "", "", nil) {
		if err != nil || r != e {
			t.Fatalf("Range = %+v, %v, want %+v", r, err, e)
		}
	}
	// The value read carries its logical keys: a Spread of another count
	// stores it under them.
	other := newSpread(t, tb, &buckets.Options{Buckets: 2, Earlier: []int{4}})
	if _, err := other.Insert(ctx, e.Value); err != nil && !errors.Is(err, table.ErrAlreadyExists) {
		t.Fatal(err)
	}
	if _, err := tb.Get(ctx, bucketkey.Partition("hot", 2, int(keys.Bucket("k1", 2)[0]-'0')), "k1", nil); err != nil {
		t.Fatalf("the copy under 2 buckets: %v", err)
	}
	// The envelope addresses the stored row: an ETag-checked delete.
	if err := tb.Delete(ctx, e.Partition, e.RowKey, e.ETag); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "hot", "k1"); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("Get after the delete = %v", err)
	}
}

// TestWithKeys: a T without key fields gets its logical keys from the
// table's key function; without one, Insert is ErrInvalid (and
// table.ErrInvalid) with nothing sent.
func TestWithKeys(t *testing.T) {
	t.Parallel()
	r := testrig.New(t)
	type reading struct{ Device, At, Value string }
	tb := testrig.NewTable[reading](t, r.Table())
	r.Faults.Reset()
	ctx := context.Background()
	bare, err := buckets.New(tb, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bare.Insert(ctx, reading{Device: "d", At: "1"}); !errors.Is(err, buckets.ErrInvalid) || !errors.Is(err, table.ErrInvalid) {
		t.Fatalf("Insert of a T without keys = %v", err)
	}
	if err := bare.InsertOp(reading{Device: "d", At: "1"}).Err(); !errors.Is(err, buckets.ErrInvalid) {
		t.Fatalf("InsertOp of a T without keys = %v", err)
	}
	if n := r.Faults.Count(); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
	s, err := buckets.New(tb.WithKeys(func(v *reading) (string, string) { return v.Device, v.At }), &buckets.Options{Buckets: 3})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := s.Insert(ctx, reading{Device: "d", At: fmt.Sprint(i), Value: fmt.Sprint("v", i)}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for e, err := range s.Range(ctx, "d", "", "", nil) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e.PartitionKey+"/"+e.RowKey+"="+e.Value.Value)
	}
	if want := []string{"d/0=v0", "d/1=v1", "d/2=v2", "d/3=v3", "d/4=v4"}; !slices.Equal(got, want) {
		t.Fatalf("Range = %v, want %v", got, want)
	}
}

// TestUpsert: Upsert inserts, then replaces the whole entity in its
// bucket, one round trip each; a Spread with earlier counts refuses it
// before the network (the entity may sit in another bucket).
func TestUpsert(t *testing.T) {
	t.Parallel()
	tb, ft := newTable(t)
	s := newSpread(t, tb, &buckets.Options{Buckets: 4})
	ctx := context.Background()
	first, err := s.Upsert(ctx, access{Hour: "u", Key: "k", Employee: "1", Resource: "door"})
	if err != nil {
		t.Fatal(err)
	}
	second, err := s.Upsert(ctx, access{Hour: "u", Key: "k", Employee: "2"})
	if err != nil {
		t.Fatal(err)
	}
	if n := ft.Count(); n != 2 || second.Partition != first.Partition || second.ETag == first.ETag {
		t.Fatalf("two Upserts: %d round trips, results %+v and %+v", n, first, second)
	}
	e, err := s.Get(ctx, "u", "k")
	if err != nil || e.Value != (access{Hour: "u", Key: "k", Employee: "2"}) || e.ETag != second.ETag {
		t.Fatalf("Get after Upsert = %+v, %v (a replace leaves no Resource)", e, err)
	}
	ft.Reset()
	changed := newSpread(t, tb, &buckets.Options{Buckets: 8, Earlier: []int{4}})
	if _, err := changed.Upsert(ctx, access{Hour: "u", Key: "k"}); !errors.Is(err, buckets.ErrInvalid) || !errors.Is(err, table.ErrInvalid) {
		t.Fatalf("Upsert with earlier counts = %v", err)
	}
	if _, err := s.Upsert(ctx, access{Hour: "", Key: "k"}); !errors.Is(err, buckets.ErrInvalid) || !errors.Is(err, table.ErrInvalidKey) {
		t.Fatalf("Upsert with an empty PartitionKey = %v", err)
	}
	if n := ft.Count(); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}

// TestInvalidOpNotSent: an InsertOp refused before the network carries its
// error, and Submit sends nothing.
func TestInvalidOpNotSent(t *testing.T) {
	t.Parallel()
	tb, ft := newTable(t)
	s := newSpread(t, tb, &buckets.Options{Buckets: 2, Bucket: func(string, int) int { return 5 }})
	op := s.InsertOp(access{Hour: "p", Key: "k"})
	if !errors.Is(op.Err(), buckets.ErrInvalid) || !errors.Is(op.Err(), table.ErrInvalid) {
		t.Fatalf("InsertOp with Bucket answering 5: %v", op.Err())
	}
	if _, err := tb.Submit(context.Background(), []table.Op{op}, nil); !errors.Is(err, buckets.ErrInvalid) {
		t.Fatalf("Submit of the op = %v", err)
	}
	if n := ft.Count(); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}
