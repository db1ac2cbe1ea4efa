package logtail_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
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
	"github.com/tablekit/tablekit/patterns/logtail"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

func TestMain(m *testing.M) { tabletest.Main(m) }

type login struct {
	IP    string
	Agent string
}

func newLog(t *testing.T, opts *logtail.Options) (*logtail.Log[login], *faults.Transport, *table.Table[login]) {
	t.Helper()
	r := testrig.New(t)
	tb := testrig.NewTable[login](t, r.Table())
	l, err := logtail.New(tb, opts)
	if err != nil {
		t.Fatal(err)
	}
	r.Faults.Reset()
	return l, r.Faults, tb
}

func TestAppendAndLatest(t *testing.T) {
	testrig.StorageOnly(t, "Latest's round trips with $top; TestCosmosLatest covers Latest's window on Cosmos DB")
	t.Parallel()
	l, ft, _ := newLog(t, nil)
	ctx := context.Background()
	base := time.Date(2024, 7, 31, 18, 0, 0, 0, time.UTC)
	for i := range 10 {
		if _, err := l.AppendAt(ctx, "user42", base.Add(time.Duration(i)*time.Minute), login{IP: fmt.Sprint("10.0.0.", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if n := ft.Count(); n != 10 {
		t.Fatalf("%d round trips for 10 appends", n)
	}
	ft.Reset()
	got, err := l.Latest(ctx, "user42", 3)
	if err != nil || len(got) != 3 || ft.Count() != 1 {
		t.Fatalf("Latest(3) = %d entries, %v in %d round trips", len(got), err, ft.Count())
	}
	for i, e := range got {
		want := base.Add(time.Duration(9-i) * time.Minute)
		if !e.Time.Equal(want) || e.Value.IP != fmt.Sprint("10.0.0.", 9-i) || e.PartitionKey != "user42" {
			t.Fatalf("entry %d: %+v, want time %v", i, e, want)
		}
	}
	// The guide's key: inverted ticks, 19 digits, first.
	if got[0].RowKey[:19] != keys.InvertedTicks(base.Add(9*time.Minute)) {
		t.Fatalf("RowKey %q", got[0].RowKey)
	}
	// Range: [18:03, 18:06) newest first.
	var times []int
	for e, err := range l.Range(ctx, "user42", base.Add(3*time.Minute), base.Add(6*time.Minute), nil) {
		if err != nil {
			t.Fatal(err)
		}
		times = append(times, e.Time.Minute())
	}
	if !slices.Equal(times, []int{5, 4, 3}) {
		t.Fatalf("Range = %v, want [5 4 3]", times)
	}
	// Trim entries before 18:07: 7 deleted, 3 left.
	n, err := l.Trim(ctx, "user42", base.Add(7*time.Minute))
	if err != nil || n != 7 {
		t.Fatalf("Trim = %d, %v", n, err)
	}
	rest, _ := l.Latest(ctx, "user42", 10)
	if len(rest) != 3 || rest[2].Time.Minute() != 7 {
		t.Fatalf("after Trim: %+v", rest)
	}
}

// TestSameTickAndConcurrentWriters: appends in one 100 ns tick get distinct
// keys, newest first from one Log; 8 Logs (processes) x 500 appends never
// collide, and Latest is in time order.
func TestSameTickAndConcurrentWriters(t *testing.T) {
	t.Parallel()
	l, _, tb := newLog(t, nil)
	ctx := context.Background()
	at := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 20 {
		if _, err := l.AppendAt(ctx, "tick", at, login{IP: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := l.Latest(ctx, "tick", 20)
	if err != nil || len(got) != 20 || got[0].Value.IP != "19" || got[19].Value.IP != "0" {
		t.Fatalf("same tick: %d entries (%v), first %+v", len(got), err, got)
	}
	const writers, each = 8, 500
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for range writers {
		w, err := logtail.New(tb, nil)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if _, err := w.Append(ctx, "busy", login{}); err != nil {
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
	var all []logtail.Entry[login]
	for e, err := range l.Range(ctx, "busy", at, time.Now().Add(time.Hour), nil) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, e)
	}
	if len(all) != writers*each { // a collision would have been a 409 above
		t.Fatalf("%d entries, want %d", len(all), writers*each)
	}

	for i := 1; i < len(all); i++ {
		if all[i].Time.After(all[i-1].Time) {
			t.Fatalf("entry %d (%v) is newer than entry %d (%v)", i, all[i].Time, i-1, all[i-1].Time)
		}
	}
}

// TestLostResponseAppendsOnce: the insert's response is lost, the resend
// answers 409; the append is reported applied and stored once.
func TestLostResponseAppendsOnce(t *testing.T) {
	t.Parallel()
	l, ft, _ := newLog(t, nil)
	ctx := context.Background()
	ft.Inject(faults.Fault{Match: func(r *http.Request) bool { return r.Method == http.MethodPost }, LoseResponse: true})
	res, err := l.Append(ctx, "user1", login{IP: "x"})
	if err != nil || !res.Verified {
		t.Fatalf("Append = %+v, %v", res, err)
	}
	got, err := l.Latest(ctx, "user1", 10)
	if err != nil || len(got) != 1 {
		t.Fatalf("%d entries stored (%v), want 1", len(got), err)
	}
}

// TestBuckets spreads a log over 4 partitions: appends go round the
// buckets, Latest reads them in parallel (4 round trips) and merges by time,
// Range merges lazily.
func TestBuckets(t *testing.T) {
	testrig.StorageOnly(t, "Latest's round trips with $top; TestCosmosLatest covers Latest's window on Cosmos DB")
	t.Parallel()
	l, ft, _ := newLog(t, &logtail.Options{Buckets: 4})
	ctx := context.Background()
	base := time.Date(2024, 7, 31, 18, 0, 0, 0, time.UTC)
	parts := map[string]bool{}
	for i := range 12 {
		a, err := l.AppendAt(ctx, "hot", base.Add(time.Duration(i)*time.Second), login{IP: fmt.Sprint(i)})
		if err != nil {
			t.Fatal(err)
		}
		parts[a.PartitionKey] = true
	}
	if len(parts) != 4 {
		t.Fatalf("appends went to %d partitions, want 4", len(parts))
	}
	ft.Reset()
	got, err := l.Latest(ctx, "hot", 5)
	if err != nil || len(got) != 5 || ft.Count() != 4 {
		t.Fatalf("Latest = %d entries, %v, %d round trips", len(got), err, ft.Count())
	}
	for i, e := range got {
		if e.Value.IP != fmt.Sprint(11-i) {
			t.Fatalf("entry %d = %+v", i, e)
		}
	}
	var ips []string
	for e, err := range l.Range(ctx, "hot", base.Add(2*time.Second), base.Add(6*time.Second), nil) {
		if err != nil {
			t.Fatal(err)
		}
		ips = append(ips, e.Value.IP)
	}
	if !slices.Equal(ips, []string{"5", "4", "3", "2"}) {
		t.Fatalf("Range = %v", ips)
	}
	if n, err := l.Trim(ctx, "hot", base.Add(10*time.Second)); err != nil || n != 10 {
		t.Fatalf("Trim = %d, %v", n, err)
	}
}

// TestInvalidRequestsSendNothing: every request refused before the
// network is ErrInvalid and table.ErrInvalid, in one line.
func TestInvalidRequestsSendNothing(t *testing.T) {
	t.Parallel()
	l, ft, tb := newLog(t, nil)
	ctx := context.Background()
	errs := map[string]error{}
	_, errs["Latest(0)"] = l.Latest(ctx, "x", 0)
	_, errs["Latest(1001)"] = l.Latest(ctx, "x", table.MaxPageSize+1)
	_, errs["Append to an empty log name"] = l.Append(ctx, "", login{})
	_, errs["AppendAt year 0"] = l.AppendAt(ctx, "x", time.Time{}.Add(-time.Hour), login{})
	now := time.Now()
	for _, err := range l.Range(ctx, "x", now, now.Add(-time.Hour), nil) {
		errs["Range backwards"] = err
	}
	_, errs["New with Buckets -1"] = logtail.New(tb, &logtail.Options{Buckets: -1})
	_, errs["New with Buckets 1001"] = logtail.New(tb, &logtail.Options{Buckets: buckets.MaxBuckets + 1})
	for what, err := range errs {
		if !errors.Is(err, logtail.ErrInvalid) || !errors.Is(err, table.ErrInvalid) {
			t.Errorf("%s = %v, want ErrInvalid and table.ErrInvalid", what, err)
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error text of several lines: %q", what, err)
		}
	}
	if !errors.Is(errs["Append to an empty log name"], table.ErrInvalidKey) {
		t.Errorf("Append to an empty log name = %v, want table.ErrInvalidKey", errs["Append to an empty log name"])
	}
	if n := ft.Count(); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}

// TestBoundsAndConcurrentTrim: times with sub-100 ns parts bound exactly
// at the service's ticks; a time just inside year 1 in a positive offset
// (before year 1 in UTC) is an error, not a panic; two Trims at once both
// succeed and delete each entry once.
func TestBoundsAndConcurrentTrim(t *testing.T) {
	t.Parallel()
	l, _, _ := newLog(t, nil)
	ctx := context.Background()
	early := time.Date(1, 1, 1, 0, 30, 0, 0, time.FixedZone("+1", 3600))
	if _, err := l.AppendAt(ctx, "x", early, login{}); !errors.Is(err, logtail.ErrInvalid) {
		t.Fatalf("AppendAt %v = %v", early, err)
	}
	if _, err := l.Trim(ctx, "x", early); !errors.Is(err, logtail.ErrInvalid) {
		t.Fatalf("Trim %v = %v", early, err)
	}
	a, err := l.AppendAt(ctx, "sub", time.Date(2024, 1, 1, 0, 0, 0, 100, time.UTC), login{IP: "a"})
	if err != nil {
		t.Fatal(err)
	}
	count := func(from, to time.Time) int {
		n := 0
		for _, err := range l.Range(ctx, "sub", from, to, nil) {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		return n
	}
	if n := count(a.Time.Add(-time.Second), a.Time.Add(50)); n != 1 {
		t.Fatalf("Range up to 50 ns after the entry found %d", n)
	}
	if n := count(a.Time.Add(50), a.Time.Add(time.Second)); n != 0 {
		t.Fatalf("Range from 50 ns after the entry found %d", n)
	}
	if n, err := l.Trim(ctx, "sub", a.Time.Add(50)); err != nil || n != 1 {
		t.Fatalf("Trim 50 ns after the entry = %d, %v", n, err)
	}
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 300 {
		if _, err := l.AppendAt(ctx, "old", base.Add(time.Duration(i)*time.Millisecond), login{}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	counts := make([]int, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			counts[i], errs[i] = l.Trim(ctx, "old", base.Add(time.Hour))
		}()
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil || counts[0]+counts[1] != 300 {
		t.Fatalf("concurrent Trims: %v deleted, errors %v", counts, errs)
	}
}

// TestKeyErrors: a log name that makes no valid PartitionKey fails every
// operation with ErrInvalid, table.ErrInvalid and table.ErrInvalidKey,
// before the network: also reads, whose filters would otherwise match
// nothing. Log names are escaped (keys.Join), so only their length, an
// empty name and reserved.Prefix make them invalid.
func TestKeyErrors(t *testing.T) {
	t.Parallel()
	l, ft, tb := newLog(t, nil)
	lb, err := logtail.New(tb, &logtail.Options{Buckets: 4})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	now := time.Now()
	errs := map[string]error{}
	bad := map[*logtail.Log[login]][]string{
		l:  {"", strings.Repeat("x", 1025), strings.Repeat("/", 400), reserved.Prefix + "log"},
		lb: {"", strings.Repeat("x", 1021), reserved.Prefix + "log"}, // + "!000"
	}
	for name, log := range map[string]*logtail.Log[login]{"one bucket": l, "4 buckets": lb} {
		for _, bad := range bad[log] {
			what := name + ", " + bad[:min(len(bad), 8)]
			_, errs[what+", Append"] = log.Append(ctx, bad, login{})
			_, errs[what+", Latest"] = log.Latest(ctx, bad, 10)
			for _, err := range log.Range(ctx, bad, now.Add(-time.Hour), now, nil) {
				errs[what+", Range"] = err
			}
			_, errs[what+", Trim"] = log.Trim(ctx, bad, now)
		}
	}
	for what, err := range errs {
		if !errors.Is(err, logtail.ErrInvalid) || !errors.Is(err, table.ErrInvalid) || !errors.Is(err, table.ErrInvalidKey) {
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

// TestEscapedNames: any log name that fits is a log, stored under its
// escaped name (buckets.Partition): names with characters keys refuse,
// and a one-bucket log named like a bucket of another log, which its
// escaping keeps apart.
func TestEscapedNames(t *testing.T) {
	t.Parallel()
	l, _, tb := newLog(t, nil)
	lb, err := logtail.New(tb, &logtail.Options{Buckets: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, name := range []string{"dept/sales #1", "a?b\\c", "tab\tname", "hot!000"} {
		a, err := l.Append(ctx, name, login{IP: name})
		if err != nil {
			t.Fatalf("Append to %q: %v", name, err)
		}
		if a.PartitionKey != keys.Join(name) {
			t.Fatalf("log %q stored in partition %q, want %q", name, a.PartitionKey, keys.Join(name))
		}
		got, err := l.Latest(ctx, name, 10)
		if err != nil || len(got) != 1 || got[0].Value.IP != name || got[0].PartitionKey != a.PartitionKey || got[0].RowKey != a.RowKey || got[0].ETag != a.ETag {
			t.Fatalf("Latest of %q = %+v, %v, want the entry appended (%+v)", name, got, err, a)
		}
	}
	// The bucketed log "hot" does not see the one-bucket log "hot!000".
	if _, err := lb.Append(ctx, "hot", login{IP: "bucketed"}); err != nil {
		t.Fatal(err)
	}
	got, err := lb.Latest(ctx, "hot", 10)
	if err != nil || len(got) != 1 || got[0].Value.IP != "bucketed" {
		t.Fatalf("Latest of the bucketed log = %+v, %v", got, err)
	}
}

// TestNilOptions: New(tbl, nil) is a one-bucket log whose partition is
// the log's name; New(nil, nil) is ErrInvalid.
func TestNilOptions(t *testing.T) {
	t.Parallel()
	l, ft, _ := newLog(t, nil)
	ctx := context.Background()
	a, err := l.Append(ctx, "user7", login{IP: "x"})
	if err != nil || a.PartitionKey != "user7" {
		t.Fatalf("Append = %+v, %v", a, err)
	}
	ft.Reset()
	if got, err := l.Latest(ctx, "user7", 1); err != nil || len(got) != 1 || ft.Count() != 1 {
		t.Fatalf("Latest = %+v, %v in %d round trips", got, err, ft.Count())
	}
	if _, err := logtail.New[login](nil, nil); !errors.Is(err, logtail.ErrInvalid) || !errors.Is(err, table.ErrInvalid) {
		t.Fatalf("New(nil, nil) = %v", err)
	}
}

// TestSameBucketsAsSpread: a log of n buckets is stored in the partitions
// of a buckets.Spread of n buckets with the log's name as logical
// partition (one bucket scheme): the Spread's Range reads the whole log,
// newest first, with the entries' keys and ETags.
func TestSameBucketsAsSpread(t *testing.T) {
	t.Parallel()
	l, _, tb := newLog(t, &logtail.Options{Buckets: 3})
	ctx := context.Background()
	base := time.Date(2024, 7, 31, 18, 0, 0, 0, time.UTC)
	for i := range 9 {
		if _, err := l.AppendAt(ctx, "dept/hot", base.Add(time.Duration(i)*time.Second), login{IP: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	want, err := l.Latest(ctx, "dept/hot", 9)
	if err != nil {
		t.Fatal(err)
	}
	s, err := buckets.New(tb, &buckets.Options{Buckets: 3})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Partitions("dept/hot"); !slices.Equal(got, []string{bucketkey.Partition("dept/hot", 3, 0), bucketkey.Partition("dept/hot", 3, 1), bucketkey.Partition("dept/hot", 3, 2)}) {
		t.Fatalf("Partitions = %v", got)
	}
	i := 0
	for e, err := range s.Range(ctx, "dept/hot", "", "", nil) {
		if err != nil {
			t.Fatal(err)
		}
		if i >= len(want) || e.Partition != want[i].PartitionKey || e.RowKey != want[i].RowKey || e.ETag != want[i].ETag || e.Value != want[i].Value {
			t.Fatalf("Spread's entry %d = %+v, want %+v", i, e, want[min(i, len(want)-1)])
		}
		i++
	}
	if i != len(want) {
		t.Fatalf("the Spread read %d of the log's %d entries", i, len(want))
	}
}
