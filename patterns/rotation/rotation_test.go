package rotation_test

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

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/rotation"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

func TestMain(m *testing.M) { tabletest.Main(m) }

// login is the guide's example: one login attempt, PartitionKey the user,
// RowKey the time in ticks.
type login struct {
	User string `table:",pk"`
	At   string `table:",rk"`
	IP   string
}

func loginAt(user string, at time.Time, ip string) login {
	return login{User: user, At: keys.Pad(uint64(keys.Ticks(at)), 19), IP: ip}
}

// clock is a settable clock for Options.Now.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// fixture is a rotation over the test's rig (internal/testrig): its
// service client goes through the rig's fault-injecting transport, its
// clock is settable; every table of its prefix (tabletest's Env.Prefix)
// is deleted when the test ends.
type fixture struct {
	env    *testrig.Rig
	ft     *faults.Transport
	clock  *clock
	prefix string
	svc    *aztables.ServiceClient // through ft
}

func newFixture(t *testing.T, now time.Time) *fixture {
	t.Helper()
	return newFixtureOn(t, testrig.New(t), now)
}

// newFixtureOn is newFixture on rig (one of testrig.Services').
func newFixtureOn(t *testing.T, rig *testrig.Rig, now time.Time) *fixture {
	t.Helper()
	f := &fixture{env: rig, ft: rig.Faults, clock: &clock{now: now}, svc: rig.Service(t)}
	f.prefix = rig.Prefix() // its tables are deleted when the test ends
	return f
}

func (f *fixture) tables(t *testing.T, opts *rotation.Options) *rotation.Tables[login] {
	t.Helper()
	o := rotation.Options{}
	if opts != nil {
		o = *opts
	}
	o.Now = f.clock.Now
	r, err := rotation.New[login](f.svc, f.prefix, &o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// stored returns the logins in the table of at's period, as "user/ip".
func stored(t *testing.T, r *rotation.Tables[login], at time.Time) []string {
	t.Helper()
	var out []string
	for l, err := range r.Table(at).Query(context.Background(), nil) {
		if err != nil {
			t.Fatalf("reading %s: %v", r.Name(at), err)
		}
		out = append(out, l.User+"/"+l.IP)
	}
	slices.Sort(out)
	return out
}

func periodNames(t *testing.T, r *rotation.Tables[login]) []string {
	t.Helper()
	ps, err := r.Periods(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range ps {
		out = append(out, p.Start.Format("2006-01-02T15"))
	}
	return out
}

var (
	jul30 = time.Date(2024, 7, 30, 0, 0, 0, 0, time.UTC)
	jul31 = jul30.AddDate(0, 0, 1)
	aug1  = jul30.AddDate(0, 0, 2)
)

func isPost(r *http.Request) bool { return r.Method == http.MethodPost }

// isCreate matches a create-table request.
func isCreate(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/Tables")
}

// TestRoutingAndDiscovery: entities go to the table of their period, named
// prefix + yyyymmdd; the first write of a period costs 3 round trips, later
// ones 1; a closed period is refused with nothing sent; Periods lists the
// tables oldest first and skips names that only look alike.
func TestRoutingAndDiscovery(t *testing.T) {
	t.Parallel()
	f := newFixture(t, jul31.Add(30*time.Minute)) // July 30 still open (Grace 1 h)
	r := f.tables(t, nil)
	ctx := context.Background()
	if _, err := r.Insert(ctx, jul30.Add(-time.Minute), loginAt("u1", jul30.Add(-time.Minute), "old")); !errors.Is(err, rotation.ErrExpired) {
		t.Fatalf("Insert into July 29, closed: %v", err)
	}
	if n := f.ft.Count(); n != 0 {
		t.Fatalf("%d requests for a closed period", n)
	}
	at := jul31.Add(10 * time.Hour)
	if _, err := r.Insert(ctx, at, loginAt("u1", at, "a")); err != nil {
		t.Fatal(err)
	}
	if n := f.ft.Count(); n != 3 {
		t.Fatalf("first write of a period: %d round trips, want 3 (insert, create, insert)", n)
	}
	f.ft.Reset()
	if _, err := r.Insert(ctx, at.Add(time.Hour), loginAt("u2", at.Add(time.Hour), "b")); err != nil || f.ft.Count() != 1 {
		t.Fatalf("second write: %v in %d round trips", err, f.ft.Count())
	}
	// A late arrival for July 30, within Grace.
	late := jul31.Add(-time.Hour)
	f.ft.Reset()
	if _, err := r.Insert(ctx, late, loginAt("u1", late, "late")); err != nil || f.ft.Count() != 3 {
		t.Fatalf("late write: %v in %d round trips", err, f.ft.Count())
	}
	// Prepare creates the next period's table ahead: then 1 round trip.
	f.ft.Reset()
	if err := r.Prepare(ctx, aug1); err != nil || f.ft.Count() != 1 {
		t.Fatalf("Prepare: %v in %d round trips", err, f.ft.Count())
	}
	if _, err := r.Insert(ctx, aug1.Add(time.Minute), loginAt("u3", aug1.Add(time.Minute), "c")); err != nil || f.ft.Count() != 2 {
		t.Fatalf("write after Prepare: %v in %d round trips", err, f.ft.Count()-1)
	}
	if got := r.Name(at); got != f.prefix+"20240731" {
		t.Fatalf("Name = %q", got)
	}
	for _, c := range []struct {
		at   time.Time
		want []string
	}{{jul30, []string{"u1/late"}}, {jul31, []string{"u1/a", "u2/b"}}, {aug1, []string{"u3/c"}}} {
		if got := stored(t, r, c.at); !slices.Equal(got, c.want) {
			t.Fatalf("table %s holds %v, want %v", r.Name(c.at), got, c.want)
		}
	}
	// Tables whose names start with the prefix but are not periods are
	// skipped: wrong width, a letter inside, an impossible date.
	for _, n := range []string{f.prefix + "2024", f.prefix + "a2024073", f.prefix + "20241340"} {
		f.env.CreateTable(n, nil)
	}
	f.ft.Reset()
	if got := periodNames(t, r); !slices.Equal(got, []string{"2024-07-30T00", "2024-07-31T00", "2024-08-01T00"}) {
		t.Fatalf("Periods = %v", got)
	}
	if n := f.ft.Count(); n != 1 {
		t.Fatalf("Periods: %d round trips", n)
	}
	// Another period length over the same prefix sees none of them.
	hourly := f.tables(t, &rotation.Options{Period: rotation.Hour})
	if got := periodNames(t, hourly); len(got) != 0 {
		t.Fatalf("hourly periods among daily tables: %v", got)
	}
}

// TestCosmosRange: on each service (the Cosmos DB simulation lists tables
// and returns entities in no key order), Range reads the periods
// overlapping [from, to) as one table (key order, same keys in period
// order), one list and one query per period; q's filter and Limit apply;
// bad requests send nothing.
func TestCosmosRange(t *testing.T) {
	t.Parallel()
	testrig.Services(t, func(t *testing.T, rig *testrig.Rig) {
		f := newFixtureOn(t, rig, jul30)
		r := f.tables(t, &rotation.Options{Grace: 30 * 24 * time.Hour})
		ctx := context.Background()
		days := []time.Time{jul30.AddDate(0, 0, -1), jul30, jul31, aug1}
		type row struct{ user, at, ip string }
		var want []row
		for d, day := range days {
			for i := range 6 {
				user := fmt.Sprint("u", i%3)
				at := day.Add(time.Duration(i) * time.Hour)
				l := loginAt(user, at, fmt.Sprint(d, "-", i))
				if _, err := r.Insert(ctx, at, l); err != nil {
					t.Fatal(err)
				}
				if d == 1 || d == 2 {
					want = append(want, row{l.User, l.At, l.IP})
				}
			}
			// The same keys in two periods: both come, older period first.
			same := login{User: "same", At: "key", IP: fmt.Sprint(d)}
			if _, err := r.Insert(ctx, day, same); err != nil {
				t.Fatal(err)
			}
			if d == 1 || d == 2 {
				want = append(want, row{same.User, same.At, same.IP})
			}
		}
		slices.SortStableFunc(want, func(a, b row) int {
			if c := keys.Compare(a.user, b.user); c != 0 {
				return c
			}
			return keys.Compare(a.at, b.at)
		})
		f.ft.Reset()
		var got []row
		// From the middle of July 30 to the start of August 1: July 30 and 31.
		for k, err := range r.Range(ctx, jul30.Add(12*time.Hour), aug1, nil) {
			if err != nil {
				t.Fatal(err)
			}
			if k.PartitionKey != k.Value.User || k.RowKey != k.Value.At {
				t.Fatalf("keys %q/%q of %+v", k.PartitionKey, k.RowKey, k.Value)
			}
			got = append(got, row{k.Value.User, k.Value.At, k.Value.IP})
		}
		if !slices.Equal(got, want) {
			t.Fatalf("Range = %v\nwant %v", got, want)
		}
		if n := f.ft.Count(); n != 3 {
			t.Fatalf("Range over 2 periods: %d round trips, want 3 (list, 2 queries)", n)
		}
		// The same range in pages of 4, resumed from each cursor: keys of
		// two periods stay together on a page.
		var paged []row
		var cursor table.Cursor
		for pages := 0; ; pages++ {
			p, err := r.RangePage(ctx, jul30.Add(12*time.Hour), aug1, cursor, &rotation.RangeOptions{PageSize: 4})
			if err != nil || pages > len(want) {
				t.Fatalf("RangePage %d: %v", pages, err)
			}
			for _, k := range p.Items {
				paged = append(paged, row{k.Value.User, k.Value.At, k.Value.IP})
			}
			if cursor = p.Next; cursor == "" {
				break
			}
		}
		if !slices.Equal(paged, want) {
			t.Fatalf("RangePage pages = %v\nwant %v", paged, want)
		}
		rig.Claim(t, testrig.Capability{Pattern: "rotation", Operation: "RangePage", How: rig.Which("1 listing + 1 query per period per page ($top = the page's size + 1, at most 1,000), merged in key order; the cursor is the last keys returned", "each page reads what is left of each period's range whole and sorts it: O(rest of the range) per page")})
		// A filter inside the periods; the first three.
		var u1 []string
		for k, err := range r.Range(ctx, jul30, aug1.Add(time.Hour), &rotation.RangeOptions{Filter: table.PartitionKey("u1")}) {
			if err != nil {
				t.Fatal(err)
			}
			if u1 = append(u1, k.Value.IP); len(u1) == 3 {
				break
			}
		}
		if !slices.Equal(u1, []string{"1-1", "1-4", "2-1"}) {
			t.Fatalf("u1, first 3 = %v", u1)
		}
		f.ft.Reset()
		for _, err := range r.Range(ctx, aug1, jul30, nil) {
			if !errors.Is(err, rotation.ErrInvalid) {
				t.Fatalf("Range backwards = %v", err)
			}
		}
		for _, size := range []int{-1, table.MaxPageSize + 1} {
			for _, err := range r.Range(ctx, jul30, aug1, &rotation.RangeOptions{PageSize: size}) {
				if !errors.Is(err, rotation.ErrInvalid) {
					t.Fatalf("Range with PageSize %d = %v", size, err)
				}
			}
			if _, err := r.RangePage(ctx, jul30, aug1, "", &rotation.RangeOptions{PageSize: size}); !errors.Is(err, rotation.ErrInvalid) {
				t.Fatalf("RangePage with PageSize %d = %v", size, err)
			}
		}
		if n := f.ft.Count(); n != 0 {
			t.Fatalf("%d requests for invalid Ranges and pages", n)
		}
		// No period in range: nothing, after the list.
		for _, err := range r.Range(ctx, aug1.AddDate(1, 0, 0), aug1.AddDate(1, 0, 1), nil) {
			t.Fatalf("a range without periods yielded (%v)", err)
		}
		rig.Claim(t, testrig.Capability{Pattern: "rotation", Operation: "Periods, Range", How: rig.Which("Periods (a listing, in name order) + 1 query per page per period, merged lazily in key order", "Periods (the listing sorted client-side) + each period's query read whole and sorted, then merged: O(range) before the first entity")})
	})
}

// TestCosmosSweep: on each service, Sweep deletes every period entirely
// before the cutoff, oldest first, one request each after one list; a
// cutoff within Grace + MaxClockSkew is
// refused with nothing sent; a table being deleted, or gone after a lost
// response, is reported Gone; throttling is retried.
func TestCosmosSweep(t *testing.T) {
	t.Parallel()
	testrig.Services(t, func(t *testing.T, rig *testrig.Rig) {
		f := newFixtureOn(t, rig, jul30.AddDate(0, 0, -5))
		r := f.tables(t, nil)
		ctx := context.Background()
		var days []time.Time
		for d := range 7 {
			day := jul30.AddDate(0, 0, d-5)
			days = append(days, day)
			f.clock.Set(day)
			var ops []table.Op
			for i := range 150 {
				ops = append(ops, r.Table(day).InsertOp(loginAt(fmt.Sprint("u", i%7), day.Add(time.Duration(i)*time.Second), "x")))
			}
			f.ft.Reset()
			if _, err := r.Submit(ctx, day, ops, nil); err != nil {
				t.Fatal(err)
			}
			if n := f.ft.Count(); n != 8 {
				t.Fatalf("Submit of 150 ops over 7 partitions into a new period: %d round trips, want 8 (create, a transaction per partition)", n)
			}
		}
		f.clock.Set(days[6].Add(12 * time.Hour))
		f.ft.Reset()
		if _, err := r.Sweep(ctx, &rotation.SweepOptions{Before: f.clock.Now().Add(-time.Hour)}); !errors.Is(err, rotation.ErrInvalid) {
			t.Fatalf("Sweep within Grace + MaxClockSkew = %v", err)
		}
		if n := f.ft.Count(); n != 0 {
			t.Fatalf("%d requests for a refused Sweep", n)
		}
		// Before the middle of days[2]: days 0 and 1 go.
		s, err := r.Sweep(ctx, &rotation.SweepOptions{Before: days[2].Add(12 * time.Hour)})
		if err != nil || len(s.Deleted) != 2 || len(s.Gone) != 0 || !s.Deleted[0].Start.Equal(days[0]) || !s.Deleted[1].Start.Equal(days[1]) {
			t.Fatalf("Sweep = %+v, %v", s, err)
		}
		if n := f.ft.Count(); n != 3 {
			t.Fatalf("Sweep of 2 periods of 150 entities: %d round trips, want 3 (list, 2 deletes)", n)
		}
		if got := periodNames(t, r); len(got) != 5 || got[0] != "2024-07-27T00" {
			t.Fatalf("Periods after the Sweep = %v", got)
		}
		// Again: nothing to do, one list.
		f.ft.Reset()
		if s, err := r.Sweep(ctx, &rotation.SweepOptions{Before: days[2].Add(12 * time.Hour)}); err != nil || len(s.Deleted)+len(s.Gone) != 0 || f.ft.Count() != 1 {
			t.Fatalf("repeated Sweep = %+v, %v in %d round trips", s, err, f.ft.Count())
		}
		// days[2] answers 409 TableBeingDeleted (another Sweep's delete in
		// progress, still listed), days[3]'s responses are lost on every
		// attempt (the fixture's policy makes 6: a query of the table finds it
		// gone), days[4] is throttled twice (retried).
		isDelete := func(d time.Time) func(*http.Request) bool {
			return func(req *http.Request) bool {
				return req.Method == http.MethodDelete && strings.Contains(req.URL.Path, r.Name(d))
			}
		}
		f.ft.Reset()
		f.ft.Inject(faults.Fault{Match: isDelete(days[2]), Status: http.StatusConflict, ErrorCode: "TableBeingDeleted"})
		for range 6 {
			f.ft.Inject(faults.Fault{Match: isDelete(days[3]), LoseResponse: true})
		}
		f.ft.Inject(
			faults.Fault{Match: isDelete(days[4]), Status: http.StatusServiceUnavailable, ErrorCode: "ServerBusy"},
			faults.Fault{Match: isDelete(days[4]), Status: http.StatusServiceUnavailable, ErrorCode: "ServerBusy"},
		)
		s, err = r.Sweep(ctx, &rotation.SweepOptions{Before: days[5]})
		if err != nil {
			t.Fatal(err)
		}
		if n := f.ft.Count(); n != 1+1+6+1+3 {
			t.Fatalf("Sweep with faults: %d round trips, want 12 (list; 1 delete of days[2]; 6 of days[3] + 1 query; 3 of days[4])", n)
		}
		var deleted, gone []time.Time
		for _, p := range s.Deleted {
			deleted = append(deleted, p.Start)
		}
		for _, p := range s.Gone {
			gone = append(gone, p.Start)
		}
		if !slices.Equal(deleted, []time.Time{days[4]}) || !slices.Equal(gone, []time.Time{days[2], days[3]}) {
			t.Fatalf("Sweep with faults: deleted %v, gone %v", deleted, gone)
		}
		// days[2] was only "being deleted" (injected): the next Sweep deletes it.
		if s, err := r.Sweep(ctx, &rotation.SweepOptions{Before: days[5]}); err != nil || len(s.Deleted) != 1 || !s.Deleted[0].Start.Equal(days[2]) {
			t.Fatalf("Sweep after TableBeingDeleted = %+v, %v", s, err)
		}
		if got := periodNames(t, r); !slices.Equal(got, []string{"2024-07-30T00", "2024-07-31T00"}) {
			t.Fatalf("Periods = %v", got)
		}
		rig.Claim(t, testrig.Capability{Pattern: "rotation", Operation: "Insert, Submit, Sweep", How: "a table per period, deleted whole: 1 request per period (Cosmos DB: each table is a billed container, created slowly; at most a few hundred per account)"})
	})
}

// TestFirstWriteFaults: the first write of a period meets a table being
// deleted (no wait, ErrExpired, nothing stored), a lost create response, a
// lost response to the insert that found no table, and the new table's
// throttling; every write ends applied exactly once or refused.
func TestFirstWriteFaults(t *testing.T) {
	t.Parallel()
	f := newFixture(t, jul31.Add(12*time.Hour))
	r := f.tables(t, nil)
	ctx := context.Background()
	at := jul31.Add(time.Hour)

	// The create answers TableBeingDeleted: the period was swept. No wait.
	f.ft.Inject(faults.Fault{Match: isCreate, Status: http.StatusConflict, ErrorCode: "TableBeingDeleted"})
	start := time.Now()
	_, err := r.Insert(ctx, at, loginAt("u", at, "1"))
	if !errors.Is(err, rotation.ErrExpired) || errors.Is(err, table.ErrOutcomeUnknown) || time.Since(start) > 5*time.Second {
		t.Fatalf("Insert meeting TableBeingDeleted = %v after %v", err, time.Since(start))
	}
	if n := f.ft.Count(); n != 2 {
		t.Fatalf("%d requests, want 2 (insert, create)", n)
	}
	if err := func() error {
		f.ft.Inject(faults.Fault{Match: isCreate, Status: http.StatusConflict, ErrorCode: "TableBeingDeleted"})
		return r.Prepare(ctx, at)
	}(); !errors.Is(err, rotation.ErrExpired) {
		t.Fatalf("Prepare meeting TableBeingDeleted = %v", err)
	}
	if got := periodNames(t, r); len(got) != 0 {
		t.Fatalf("tables after refused creates: %v", got)
	}

	// The insert's answer is lost (the resend also finds no table), then
	// the create's: the table is created once, the entity stored once.
	f.ft.Reset()
	f.ft.Inject(faults.Fault{Match: isPost, LoseResponse: true}, faults.Fault{Match: isCreate, LoseResponse: true})
	if _, err := r.Insert(ctx, at, loginAt("u", at, "2")); err != nil {
		t.Fatalf("Insert with lost responses: %v", err)
	}
	// insert, its resend, the table's settling read (TableNotFound as
	// well), create, its resend (TableAlreadyExists), insert
	if n := f.ft.Count(); n != 6 {
		t.Fatalf("%d requests, want 6", n)
	}
	if got := stored(t, r, at); !slices.Equal(got, []string{"u/2"}) {
		t.Fatalf("stored %v", got)
	}

	// A new table throttles its first writes: the retry policy absorbs it.
	next := aug1.Add(time.Hour)
	f.ft.Reset()
	busy := faults.Fault{Match: func(req *http.Request) bool { return isPost(req) && !isCreate(req) }, Status: http.StatusServiceUnavailable, ErrorCode: "ServerBusy"}
	if err := r.Prepare(ctx, next); err != nil {
		t.Fatal(err)
	}
	f.ft.Inject(busy, busy)
	if _, err := r.Insert(ctx, next, loginAt("u", next, "3")); err != nil {
		t.Fatalf("Insert throttled twice: %v", err)
	}
	if n := f.ft.Count(); n != 4 {
		t.Fatalf("%d requests, want 4 (create, 2 throttled, insert)", n)
	}
	// An insert answered TableBeingDeleted directly.
	f.ft.Inject(faults.Fault{Match: isPost, Status: http.StatusConflict, ErrorCode: "TableBeingDeleted"})
	if _, err := r.Insert(ctx, next, loginAt("u", next, "4")); !errors.Is(err, rotation.ErrExpired) {
		t.Fatalf("Insert answered TableBeingDeleted = %v", err)
	}
	if got := stored(t, r, next); !slices.Equal(got, []string{"u/3"}) {
		t.Fatalf("stored %v", got)
	}
	// Submit into a table being deleted: refused, nothing sent but the create.
	f.ft.Reset()
	f.ft.Inject(faults.Fault{Match: isCreate, Status: http.StatusConflict, ErrorCode: "TableBeingDeleted"})
	if _, err := r.Submit(ctx, next, []table.Op{r.Table(next).InsertOp(loginAt("v", next, "5"))}, nil); !errors.Is(err, rotation.ErrExpired) || f.ft.Count() != 1 {
		t.Fatalf("Submit meeting TableBeingDeleted = %v after %d requests", err, f.ft.Count())
	}
}

// TestInvalidSendsNothing: configurations and requests that cannot work
// fail with sentinels before the network.
func TestInvalidSendsNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, jul31)
	bad := []struct {
		prefix string
		opts   *rotation.Options
	}{
		{"", nil}, {"1abc", nil}, {"abc1", nil}, {"a-b", nil}, {strings.Repeat("a", 56), nil},
		{"ok", &rotation.Options{Grace: -time.Second}},
		{"ok", &rotation.Options{Concurrency: -1}},
		{"ok", &rotation.Options{Period: rotation.Period{Layout: "Jan2006", Start: rotation.Month.Start}}},
		{"ok", &rotation.Options{Period: rotation.Period{Layout: "20060102"}}},
		{"ok", &rotation.Options{Period: rotation.Period{Layout: "200601", Start: rotation.Day.Start}}},
		{"ok", &rotation.Options{Period: rotation.Period{Layout: "20060102", Start: func(t time.Time) time.Time { return t.Add(time.Hour) }}}},
	}
	errs := map[string]error{}
	for _, b := range bad {
		_, errs[fmt.Sprintf("New(%q, %+v)", b.prefix, b.opts)] = rotation.New[login](f.svc, b.prefix, b.opts)
	}
	_, errs["New without a client"] = rotation.New[login](nil, "ok", nil)
	type unstorable struct {
		PartitionKey, RowKey string
		C                    chan int
	}
	_, errs["New of an unstorable type"] = rotation.New[unstorable](f.svc, "ok", nil)
	if err := errs["New of an unstorable type"]; !errors.Is(err, table.ErrInvalidEntity) {
		t.Errorf("New of an unstorable type = %v", err)
	}
	r := f.tables(t, nil)
	ctx := context.Background()
	_, errs["Insert of an invalid key"] = r.Insert(ctx, jul31, login{User: "u", At: "bad/key"})
	if err := errs["Insert of an invalid key"]; !errors.Is(err, table.ErrInvalidKey) {
		t.Errorf("Insert of an invalid key = %v", err)
	}
	tb := r.Table(jul31)
	_, errs["Submit of an op that cannot be encoded"] = r.Submit(ctx, jul31, []table.Op{tb.UpsertOp(login{User: "u", At: "1"}, table.Fields("Nope"))}, nil)
	_, errs["Sweep within the write window"] = r.Sweep(ctx, &rotation.SweepOptions{Before: jul31})
	_, errs["Sweep without options"] = r.Sweep(ctx, nil)
	_, errs["Sweep without Before"] = r.Sweep(ctx, &rotation.SweepOptions{})
	for _, size := range []int{-1, table.MaxPageSize + 1} {
		_, errs[fmt.Sprint("RangePage of PageSize ", size)] = r.RangePage(ctx, jul30, aug1, "", &rotation.RangeOptions{PageSize: size})
	}
	for _, err := range r.Range(ctx, aug1, jul30, nil) {
		errs["Range backwards"] = err
	}
	for what, err := range errs {
		if !errors.Is(err, rotation.ErrInvalid) || !errors.Is(err, table.ErrInvalid) {
			t.Errorf("%s = %v, want ErrInvalid and table.ErrInvalid", what, err)
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error text of several lines: %q", what, err)
		}
	}
	if err := r.Prepare(ctx, jul30.Add(-time.Hour)); !errors.Is(err, rotation.ErrExpired) {
		t.Errorf("Prepare of a closed period = %v", err)
	}
	if _, err := r.Submit(ctx, jul30.Add(-time.Hour), nil, nil); !errors.Is(err, rotation.ErrExpired) {
		t.Errorf("Submit into a closed period = %v", err)
	}
	if n := f.ft.Count(); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
	// A Period of your own: weeks starting on Monday.
	week := rotation.Period{Layout: "20060102", Start: func(t time.Time) time.Time {
		d := rotation.Day.Start(t)
		return d.AddDate(0, 0, -(int(d.Weekday())+6)%7)
	}}
	w, err := rotation.New[login](f.svc, f.prefix+"w", &rotation.Options{Period: week})
	if err != nil || w.Name(jul31) != f.prefix+"w20240729" {
		t.Fatalf("weekly: %v, %q", err, w.Name(jul31))
	}
}

// TestWithKeys: a type without key fields gets its keys from WithKeys;
// without them its writes fail before the network.
func TestWithKeys(t *testing.T) {
	t.Parallel()
	f := newFixture(t, jul31)
	type attempt struct {
		User string
		At   time.Time
		OK   bool
	}
	r, err := rotation.New[attempt](f.svc, f.prefix, &rotation.Options{Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	at := jul31.Add(time.Hour)
	if _, err := r.Insert(ctx, at, attempt{User: "u", At: at}); !errors.Is(err, table.ErrInvalidEntity) || !errors.Is(err, rotation.ErrInvalid) || f.ft.Count() != 0 {
		t.Fatalf("Insert without keys = %v after %d requests", err, f.ft.Count())
	}
	keyed := r.WithKeys(func(a *attempt) (string, string) { return a.User, keys.Pad(uint64(keys.Ticks(a.At)), 19) })
	for i := range 3 {
		a := attempt{User: "u", At: at.Add(time.Duration(i) * time.Minute), OK: i%2 == 0}
		if _, err := keyed.Insert(ctx, a.At, a); err != nil {
			t.Fatal(err)
		}
	}
	var got []bool
	for k, err := range keyed.Range(ctx, jul31, aug1, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if k.PartitionKey != "u" || !k.Value.At.Equal(jul31.Add(time.Hour+time.Duration(len(got))*time.Minute)) {
			t.Fatalf("entity %d: %+v", len(got), k)
		}
		got = append(got, k.Value.OK)
	}
	if !slices.Equal(got, []bool{true, false, true}) {
		t.Fatalf("Range = %v", got)
	}
}

// TestNilOptions: New(svc, prefix, nil) is a rotation by day on the real
// clock; Range yields each entity in its envelope, whose keys and ETag
// address it in its period's table.
func TestNilOptions(t *testing.T) {
	t.Parallel()
	f := newFixture(t, jul31)
	r, err := rotation.New[login](f.svc, f.prefix, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Name(jul31.Add(23 * time.Hour)); got != f.prefix+"20240731" {
		t.Fatalf("Name = %q: not a day's table", got)
	}
	ctx := context.Background()
	now := time.Now()
	res, err := r.Insert(ctx, now, loginAt("u", now, "ip"))
	if err != nil {
		t.Fatal(err)
	}
	var got []table.Entity[login]
	for e, err := range r.Range(ctx, now.Add(-time.Hour), now.Add(time.Hour), nil) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e)
	}
	if len(got) != 1 || got[0].ETag != res.ETag || got[0].PartitionKey != "u" || got[0].Value.IP != "ip" {
		t.Fatalf("Range = %+v, want the entity inserted with ETag %s", got, res.ETag)
	}
	if err := r.Table(now).Delete(ctx, got[0].PartitionKey, got[0].RowKey, got[0].ETag); err != nil {
		t.Fatal(err)
	}
}
