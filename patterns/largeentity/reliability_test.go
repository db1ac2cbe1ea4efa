package largeentity_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/largeentity"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/retry"
)

var errCrash = errors.New("crash")

// crashAt returns a hook that stops the operation before step.
func crashAt(step string) func(string) error {
	return func(s string) error {
		if s == step {
			return errCrash
		}
		return nil
	}
}

// TestCrashPoints stops each multi-step write between its steps, as a
// crash would, and checks the crash table of the package documentation:
// never a pointer to a missing or partial blob, only orphans, which Sweep
// deletes once they are older than Grace and not before.
func TestCrashPoints(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := newStore[Employee](t, f, nil)
	ctx := context.Background()
	v1 := Employee{Name: "v1", Photo: photo(100<<10, 1)}
	v2 := Employee{Name: "v2", Photo: photo(100<<10, 2)}

	// Insert stopped after its upload: no entity, one orphan.
	largeentity.SetHook(s, crashAt("entity"))
	if _, err := s.Insert(ctx, at("Sales", "1", v1)); !errors.Is(err, errCrash) {
		t.Fatalf("Insert = %v", err)
	}
	largeentity.SetHook(s, nil)
	if _, err := s.Get(ctx, "Sales", "1", nil); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("Get after a crash before the entity = %v", err)
	}
	if o := f.orphans(t); len(o) != 1 {
		t.Fatalf("orphans %v, want the uploaded photo", o)
	}
	// Insert stopped before its upload: nothing at all.
	largeentity.SetHook(s, crashAt("upload"))
	if _, err := s.Insert(ctx, at("Sales", "1", v1)); !errors.Is(err, errCrash) {
		t.Fatalf("Insert = %v", err)
	}
	largeentity.SetHook(s, nil)
	if o := f.orphans(t); len(o) != 1 {
		t.Fatalf("orphans %v, want still one", o)
	}

	// Update stopped after its upload: the old version, whole.
	res, err := s.Insert(ctx, at("Sales", "1", v1))
	if err != nil {
		t.Fatal(err)
	}
	largeentity.SetHook(s, crashAt("entity"))
	if _, err := s.Update(ctx, at("Sales", "1", v2), res.ETag); !errors.Is(err, errCrash) {
		t.Fatalf("Update = %v", err)
	}
	largeentity.SetHook(s, nil)
	if got, err := s.Get(ctx, "Sales", "1", nil); err != nil || got.Value.Name != "v1" || !bytes.Equal(got.Value.Photo, v1.Photo) {
		t.Fatalf("Get after a crash in Update = %q, %v", got.Value.Name, err)
	}
	if o := f.orphans(t); len(o) != 2 {
		t.Fatalf("orphans %v, want 2", o)
	}

	// Delete stopped between the entity and its blobs: the entity gone,
	// its photo an orphan.
	if _, err := s.Insert(ctx, at("Sales", "2", v2)); err != nil {
		t.Fatal(err)
	}
	e2, _ := s.Get(ctx, "Sales", "2", nil)
	largeentity.SetHook(s, crashAt("delete blobs"))
	if err := s.Delete(ctx, "Sales", "2", e2.ETag); !errors.Is(err, errCrash) {
		t.Fatalf("Delete = %v", err)
	}
	largeentity.SetHook(s, nil)
	if _, err := s.Get(ctx, "Sales", "2", nil); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("Get after a crash in Delete = %v", err)
	}
	orphans := f.orphans(t)
	if len(orphans) != 3 {
		t.Fatalf("orphans %v, want 3", orphans)
	}

	// Sweep within Grace deletes nothing (a write may still be on its
	// way); past it, exactly the orphans.
	f.reset()
	sr, err := s.Sweep(ctx)
	if err != nil || sr.Listed != 4 || sr.Old != 0 || sr.Deleted != 0 {
		t.Fatalf("Sweep within Grace = %+v, %v", sr, err)
	}
	f.trips(t, "Sweep with nothing old", 0, 1)
	f.clock.Advance(largeentity.DefaultGraceForTest + time.Minute)
	sr, err = s.Sweep(ctx)
	if err != nil || sr.Listed != 4 || sr.Old != 4 || sr.Entities != 2 || sr.Deleted != 3 {
		t.Fatalf("Sweep past Grace = %+v, %v", sr, err)
	}
	// 1 listing, 2 entity reads (entities 1 and 2), 3 deletes.
	f.trips(t, "Sweep", 2, 4)
	if o := f.orphans(t); len(o) != 0 {
		t.Fatalf("orphans after Sweep: %v", o)
	}
	if got, err := s.Get(ctx, "Sales", "1", nil); err != nil || !bytes.Equal(got.Value.Photo, v1.Photo) {
		t.Fatalf("Get after Sweep: %v", err)
	}
	sr, err = s.Sweep(ctx)
	if err != nil || sr.Deleted != 0 || sr.Listed != 1 {
		t.Fatalf("second Sweep = %+v, %v", sr, err)
	}
}

// A write whose entity would be sent more than Grace/2 after its uploads
// began is not sent: Sweep may already count its blobs as orphans. The
// write deletes its blobs and reports ErrGraceExceeded (not applied).
func TestGraceGuard(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := newStore(t, f, &largeentity.Options[Employee]{Grace: 10 * time.Minute})
	ctx := context.Background()
	largeentity.SetHook(s, func(step string) error {
		if step == "entity" {
			f.clock.Advance(5*time.Minute + time.Second)
		}
		return nil
	})
	f.reset()
	_, err := s.Insert(ctx, at("Sales", "1", Employee{Photo: photo(100<<10, 1)}))
	if !errors.Is(err, largeentity.ErrGraceExceeded) || errors.Is(err, table.ErrOutcomeUnknown) {
		t.Fatalf("Insert = %v", err)
	}
	f.trips(t, "a late Insert (upload, then its deletion)", 0, 2)
	if n := len(f.blobNames(t)); n != 0 {
		t.Fatalf("%d blobs left", n)
	}
	largeentity.SetHook(s, nil)
	if _, err := s.Insert(ctx, at("Sales", "1", Employee{Photo: photo(100<<10, 1)})); err != nil {
		t.Fatal(err)
	}
}

// TestLostResponses loses the response of every write request in turn
// (each blob upload, the entity write, each delete) after the service
// applied it. Every operation reports success (never a false failure),
// stores exactly one blob per value (no duplicate uploads), and leaves no
// orphan apart from the replaced version's.
func TestLostResponses(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := newStore[Employee](t, f, nil)
	ctx := context.Background()
	lose := func(match func(*http.Request) bool) {
		f.r.Faults.Inject(faults.Fault{Match: match, LoseResponse: true})
	}
	blobPut := f.blob(func(r *http.Request) bool { return r.Method == http.MethodPut })
	tableWrite := f.table(isWrite)
	blobDelete := f.blob(isDelete)
	v := Employee{Name: "v1", Photo: photo(80<<10, 1), CV: strings.Repeat("x", 40<<10)}

	lose(blobPut)
	lose(blobPut)
	lose(tableWrite)
	res, err := s.Insert(ctx, at("Sales", "1", v))
	if err != nil || !res.Verified || len(res.Blobs) != 2 {
		t.Fatalf("Insert with every response lost = %+v, %v", res, err)
	}
	if n := len(f.blobNames(t)); n != 2 {
		t.Fatalf("%d blobs after Insert, want 2", n)
	}
	got, err := s.Get(ctx, "Sales", "1", nil)
	if err != nil || got.Value.CV != v.CV || !bytes.Equal(got.Value.Photo, v.Photo) {
		t.Fatalf("Get = %v", err)
	}

	v.Name, v.Photo = "v2", photo(80<<10, 2)
	lose(blobPut)
	lose(blobPut)
	lose(tableWrite)
	res, err = s.Update(ctx, at("Sales", "1", v), got.ETag)
	if err != nil || !res.Verified {
		t.Fatalf("Update with every response lost = %+v, %v", res, err)
	}
	lose(tableWrite)
	m, err := s.Modify(ctx, "Sales", "1", func(e *Employee) error { e.Name += "!"; return nil })
	if err != nil || m.Value.Name != "v2!" {
		t.Fatalf("Modify with its response lost = %v", err)
	}
	if o := f.orphans(t); len(o) != 2 {
		t.Fatalf("orphans %v, want the first version's 2", o)
	}

	lose(tableWrite)
	lose(blobDelete)
	lose(blobDelete)
	err = s.Delete(ctx, "Sales", "1", m.ETag)
	if !errors.Is(err, table.ErrOutcomeUnknown) || !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("Delete with every response lost = %v (want the core's unknown, gone)", err)
	}
	if o := f.orphans(t); len(o) != 2 {
		t.Fatalf("orphans %v, want the first version's 2: the deleted version's blobs are gone", o)
	}
	f.clock.Advance(2 * largeentity.DefaultGraceForTest)
	lose(blobDelete)
	if sr, err := s.Sweep(ctx); err != nil || sr.Deleted != 2 {
		t.Fatalf("Sweep with a lost response = %+v, %v", sr, err)
	}
	if n := len(f.blobNames(t)); n != 0 {
		t.Fatalf("%d blobs left", n)
	}
}

// TestCorruptBlobs: a blob whose content no longer has the pointer's
// SHA-256 or size, or that is missing while the entity points at it, is
// ErrCorrupt; the data is never returned.
func TestCorruptBlobs(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := newStore[Employee](t, f, nil)
	ctx := context.Background()
	for i, damage := range []func(name string, content []byte) error{
		func(name string, c []byte) error { // same length, one bit flipped
			c[len(c)/2] ^= 1
			_, err := f.cleanBlobs.NewBlockBlobClient(name).UploadBuffer(ctx, c, nil)
			return err
		},
		func(name string, c []byte) error { // truncated
			_, err := f.cleanBlobs.NewBlockBlobClient(name).UploadBuffer(ctx, c[:len(c)-1], nil)
			return err
		},
		func(name string, c []byte) error { // longer
			_, err := f.cleanBlobs.NewBlockBlobClient(name).UploadBuffer(ctx, append(c, 0), nil)
			return err
		},
		func(name string, _ []byte) error { // gone
			_, err := f.cleanBlobs.NewBlobClient(name).Delete(ctx, nil)
			return err
		},
	} {
		rk := fmt.Sprint(i)
		res, err := s.Insert(ctx, at("Sales", rk, Employee{Name: "n", Photo: photo(64<<10+1, uint64(i))}))
		if err != nil {
			t.Fatal(err)
		}
		name := res.Blobs[0].Name
		if err := damage(name, f.blobNames(t)[name]); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx, "Sales", rk, nil)
		if !errors.Is(err, largeentity.ErrCorrupt) || got.Value.Photo != nil || got.Value.Name != "" {
			t.Fatalf("damage %d: Get = %d bytes, %v", i, len(got.Value.Photo), err)
		}
		if _, err := s.Modify(ctx, "Sales", rk, func(*Employee) error { return nil }); !errors.Is(err, largeentity.ErrCorrupt) {
			t.Fatalf("damage %d: Modify = %v", i, err)
		}
		// The entity is still readable without the damaged value.
		if got, err := s.Get(ctx, "Sales", rk, &largeentity.GetOptions{Select: []string{"Name"}}); err != nil || got.Value.Name != "n" {
			t.Fatalf("damage %d: Get with a projection = %v", i, err)
		}
	}
	// A malformed pointer.
	if _, err := f.cleanTbl.Upsert(ctx, table.Dynamic{PartitionKey: "Sales", RowKey: "x", Properties: map[string]any{largeentity.PointerPrefix + "Photo": "not json"}}, table.Replace); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "Sales", "x", nil); !errors.Is(err, largeentity.ErrCorrupt) {
		t.Fatalf("Get of a malformed pointer = %v", err)
	}
}

// gateTransport holds the blob reads (GET) of one client at a gate until
// the test opens it, telling the test when the first one arrived.
type gateTransport struct {
	next    policy.Transporter
	arrived chan struct{}
	open    chan struct{}
	once    sync.Once
}

func (g *gateTransport) Do(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet {
		g.once.Do(func() { close(g.arrived) })
		<-g.open
	}
	return g.next.Do(r)
}

// gatedStore is a Store whose blob reads wait at a gate.
func gatedStore(t *testing.T, f *fixture) (*largeentity.Store[Employee], *gateTransport) {
	t.Helper()
	g := &gateTransport{next: http.DefaultClient, arrived: make(chan struct{}), open: make(chan struct{})}
	bo := &container.ClientOptions{}
	bo.Transport = g
	testrig.Fast.ApplyTo(&bo.ClientOptions)
	c, err := container.NewClientFromConnectionString(f.r.ConnectionString, containerName(f.blobs), bo)
	if err != nil {
		t.Fatal(err)
	}
	s, err := largeentity.New(f.tbl, c, &largeentity.Options[Employee]{Now: f.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return s, g
}

// A read that found the entity, then its blob gone (a Delete, or Sweep
// after an Update, came between the two), reads the entity again: it
// returns the current version whole, or ErrNotFound; never ErrCorrupt.
func TestReadRacingDeleteAndSweep(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := newStore[Employee](t, f, nil)
	ctx := context.Background()
	res, err := s.Insert(ctx, at("Sales", "1", Employee{Name: "v1", Photo: photo(70<<10, 1)}))
	if err != nil {
		t.Fatal(err)
	}

	reader, g := gatedStore(t, f)
	type got struct {
		e   largeentity.Entity[Employee]
		err error
	}
	done := make(chan got, 1)
	go func() {
		e, err := reader.Get(ctx, "Sales", "1", nil)
		done <- got{e, err}
	}()
	<-g.arrived // the reader has the entity, and waits for its blob
	v2 := Employee{Name: "v2", Photo: photo(70<<10, 2)}
	if _, err := s.Update(ctx, at("Sales", "1", v2), res.ETag); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(2 * largeentity.DefaultGraceForTest)
	if sr, err := s.Sweep(ctx); err != nil || sr.Deleted != 1 {
		t.Fatalf("Sweep = %+v, %v", sr, err)
	}
	close(g.open)
	r := <-done
	if r.err != nil || r.e.Value.Name != "v2" || !bytes.Equal(r.e.Value.Photo, v2.Photo) {
		t.Fatalf("Get racing Update and Sweep = %q, %v", r.e.Value.Name, r.err)
	}

	reader, g = gatedStore(t, f)
	go func() {
		e, err := reader.Get(ctx, "Sales", "1", nil)
		done <- got{e, err}
	}()
	<-g.arrived
	if err := s.Delete(ctx, "Sales", "1", azcore.ETagAny); err != nil {
		t.Fatal(err)
	}
	close(g.open)
	if r := <-done; !errors.Is(r.err, table.ErrNotFound) {
		t.Fatalf("Get racing Delete = %v", r.err)
	}
}

// TestConcurrentReplace: writers replace one large entity concurrently
// (Modify, and Update with the ETag read) while readers read it. Every
// read returns one writer's complete value (its photo's hash matches its
// pointer and names the writer's round); no change is lost; afterwards
// Sweep leaves exactly the current version's blob.
func TestConcurrentReplace(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := newStore[Employee](t, f, nil)
	ctx := context.Background()
	img := func(name string) []byte { // 40 KiB whose content names the version
		return bytes.Repeat([]byte(name+";"), (40<<10)/(len(name)+1)+1)
	}
	if _, err := s.Insert(ctx, at("Sales", "1", Employee{Name: "start", Photo: img("start")})); err != nil {
		t.Fatal(err)
	}
	const writers, rounds = 3, 6
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 100)
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				e, err := s.Get(ctx, "Sales", "1", nil)
				if err != nil {
					errs <- fmt.Errorf("reader %d: %w", r, err)
					return
				}
				if !bytes.Equal(e.Value.Photo, img(e.Value.Name)) {
					errs <- fmt.Errorf("reader %d: version %q with another version's photo", r, e.Value.Name)
					return
				}
			}
		}()
	}
	var ww sync.WaitGroup
	for w := range writers {
		ww.Add(1)
		go func() {
			defer ww.Done()
			for i := range rounds {
				name := fmt.Sprintf("w%d-%d", w, i)
				var err error
				if i%2 == 0 {
					_, err = s.Modify(ctx, "Sales", "1", func(e *Employee) error {
						e.Name, e.Photo, e.CV = name, img(name), e.CV+name+","
						return nil
					})
				} else {
					err = f.retryPolicy().Do(ctx, func(ctx context.Context) error {
						e, err := s.Get(ctx, "Sales", "1", nil)
						if err != nil {
							return err
						}
						e.Value.Name, e.Value.Photo, e.Value.CV = name, img(name), e.Value.CV+name+","
						_, err = s.Update(ctx, at("Sales", "1", e.Value), e.ETag)
						return err
					})
				}
				if err != nil {
					errs <- fmt.Errorf("writer %d: %w", w, err)
					return
				}
			}
		}()
	}
	ww.Wait()
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	final, err := s.Get(ctx, "Sales", "1", nil)
	if err != nil {
		t.Fatal(err)
	}
	applied := strings.Split(strings.TrimSuffix(final.Value.CV, ","), ",")
	if len(applied) != writers*rounds {
		t.Fatalf("%d changes applied, want %d: %v", len(applied), writers*rounds, applied)
	}
	f.clock.Advance(2 * largeentity.DefaultGraceForTest)
	if _, err := s.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	left := f.blobNames(t)
	if len(left) != 1 || left[final.Blobs[0].Name] == nil {
		t.Fatalf("blobs after Sweep: %d, want the current photo only", len(left))
	}
}

// retryPolicy retries a read-and-Update loop on conflicts.
func (f *fixture) retryPolicy() retry.Policy {
	p := testrig.Fast
	p.MaxRetries = 200
	p.Retryable = retry.RetryOn412
	return p
}

// TestRange reads a partition of mixed entities in key order with their
// values, Concurrency entities' blobs at a time, and without blobs when
// the projection skips them.
func TestRange(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := newStore(t, f, &largeentity.Options[Employee]{Concurrency: 3})
	ctx := context.Background()
	want := map[string]Employee{}
	for i := range 12 {
		rk := fmt.Sprintf("%03d", i)
		e := Employee{Name: "e" + rk, Photo: photo(10<<10+i*(6<<10), uint64(i))} // from 10 KiB inline to 76 KiB offloaded
		if _, err := s.Insert(ctx, at("Sales", rk, e)); err != nil {
			t.Fatal(err)
		}
		want[rk] = e
	}
	if _, err := s.Insert(ctx, at("Other", "000", Employee{Name: "other"})); err != nil {
		t.Fatal(err)
	}
	offloaded := 0
	for _, e := range want {
		if len(e.Photo) > largeentity.DefaultThresholdForTest {
			offloaded++
		}
	}
	f.reset()
	peak := watchConcurrency(f.r.Faults, f.blobHost)
	var got []string
	for e, err := range s.Range(ctx, "Sales", "001", "011", nil) {
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(e.Value.Photo, want[e.Value.ID].Photo) || e.Value.Name != "e"+e.Value.ID {
			t.Fatalf("entity %s: wrong value", e.Value.ID)
		}
		got = append(got, e.Value.ID)
	}
	if want := []string{"001", "002", "003", "004", "005", "006", "007", "008", "009", "010"}; !slices.Equal(got, want) {
		t.Fatalf("Range = %v, want %v", got, want)
	}
	inRange := 0
	for rk, e := range want {
		if rk >= "001" && rk < "011" && len(e.Photo) > largeentity.DefaultThresholdForTest {
			inRange++
		}
	}
	f.trips(t, "Range", 1, inRange)
	if p := peak(); p > 3 {
		t.Fatalf("%d blob reads in flight at once, want at most 3 (Concurrency 3)", p)
	}
	n := 0
	for e, err := range s.Range(ctx, "Sales", "", "", &largeentity.GetOptions{Select: []string{"Name"}}) {
		if err != nil || e.Value.Photo != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 12 {
		t.Fatalf("Range of the whole partition: %d entities", n)
	}
	f.trips(t, "Range with a projection that skips the photos", 1, 0)
	for range s.Range(ctx, "Sales", "", "", nil) {
		break
	}
	f.reset()
}

// watchConcurrency makes ft hold each blob read (a request to host)
// briefly and returns a function reporting the most reads that were in
// flight at once.
func watchConcurrency(ft *faults.Transport, host string) func() int {
	w := &concurrencyWatch{next: ft.Next, host: host}
	if w.next == nil {
		w.next = http.DefaultClient
	}
	ft.Next = w
	return func() int {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.peak
	}
}

type concurrencyWatch struct {
	next           policy.Transporter
	host           string
	mu             sync.Mutex
	inFlight, peak int
}

func (w *concurrencyWatch) Do(r *http.Request) (*http.Response, error) {
	if r.URL.Host != w.host {
		return w.next.Do(r)
	}
	w.mu.Lock()
	w.inFlight++
	w.peak = max(w.peak, w.inFlight)
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.inFlight--
		w.mu.Unlock()
	}()
	return w.next.Do(r)
}
