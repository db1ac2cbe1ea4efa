package wideentity_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/modelcheck"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/wideentity"
	"github.com/tablekit/tablekit/retry"
)

// stamp is the value every P property of a write by writer w that makes
// the entity's N equal n: one value for the whole entity.
func stamp(w, n int64) int64 { return w<<32 | n }

// checkOneWrite reports an error unless d is one write's complete entity:
// every P property holds the stamp of the same writer and of d's N.
func checkOneWrite(d table.Dynamic, props int) error {
	n, _ := d.Properties["N"].(int64)
	var first int64
	for i := range props {
		v, ok := d.Properties[fmt.Sprintf("P%04d", i)].(int64)
		if i == 0 {
			first = v
		}
		if !ok || v != first || v&(1<<32-1) != n {
			return fmt.Errorf("a mix: P0000 = %#x, P%04d = %#x (present %v), N = %d", first, i, v, ok, n)
		}
	}
	return nil
}

// TestConcurrentWholeEntityWriters: six writers rewrite one entity of 600
// properties over 4 parts, four with Modify and two with retry.Do over Get
// and Update(ETag), while two readers read it: every read, and the final
// entity, is one writer's complete entity, and no write is lost (N counts
// them all). 6 x 8 writes in make test, 6 x 60 in make soak.
func TestConcurrentWholeEntityWriters(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := newStore[table.Dynamic](t, f, 4)
	ctx := context.Background()
	const props = 600
	entity := func(w, n int64) table.Dynamic {
		d := bag(props, 0)
		for name := range d.Properties {
			d.Properties[name] = stamp(w, n)
		}
		d.Properties["N"] = n
		return d
	}
	if _, err := s.Insert(ctx, at("hot", "e", entity(0, 0))); err != nil {
		t.Fatal(err)
	}
	each := modelcheck.Steps(8, 60)
	var wg sync.WaitGroup
	var done atomic.Bool
	errs := make(chan error, 16)
	for w := int64(1); w <= 6; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				var err error
				if w <= 4 {
					_, err = s.Modify(ctx, "hot", "e", func(d *table.Dynamic) error {
						*d = at("hot", "e", entity(w, d.Properties["N"].(int64)+1))
						return nil
					})
				} else {
					p := testrig.Contention
					p.Retryable = retry.RetryOn412
					err = p.Do(ctx, func(ctx context.Context) error {
						e, err := s.Get(ctx, "hot", "e")
						if err != nil {
							return err
						}
						_, err = s.Update(ctx, at("hot", "e", entity(w, e.Value.Properties["N"].(int64)+1)), e.ETag, table.Replace)
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
	var readers sync.WaitGroup
	var reads atomic.Int64
	for range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for !done.Load() {
				e, err := s.Get(ctx, "hot", "e")
				if err == nil {
					err = checkOneWrite(e.Value, props)
				}
				if err != nil {
					errs <- fmt.Errorf("reader: %w", err)
					return
				}
				reads.Add(1)
			}
		}()
	}
	wg.Wait()
	done.Store(true)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	e, err := s.Get(ctx, "hot", "e")
	if err != nil {
		t.Fatal(err)
	}
	if err := checkOneWrite(e.Value, props); err != nil {
		t.Fatal(err)
	}
	if n := e.Value.Properties["N"]; n != int64(6*each) {
		t.Fatalf("N = %v, want %d: a write was lost or applied twice", n, 6*each)
	}
	if rks, _ := f.rows(t, "hot"); len(rks) != 5 {
		t.Fatalf("%d rows, want 5", len(rks))
	}
	t.Logf("%d consistent reads during %d writes", reads.Load(), 6*each)
}

// namesInTwoParts returns two property names that keys.Bucket puts in
// different parts of a layout of parts.
func namesInTwoParts(parts int) (string, string) {
	a := "A0"
	for i := 1; ; i++ {
		b := fmt.Sprint("B", i)
		if keys.Bucket(a, parts) != keys.Bucket(b, parts) {
			return a, b
		}
	}
}

// TestReadsAcrossPages: read in pages of 2 rows, an entity of 6 rows takes
// 3 pages and a header read (4 round trips). While a writer rewrites it
// whole, and then while another sets two properties of different parts at
// once with Fields update, every read returns one version: all P properties
// equal, and the two properties equal. Version checks catch the whole
// rewrites between pages; the header read catches the Fields update, which
// change no version.
func TestReadsAcrossPages(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := newStore[table.Dynamic](t, f, 5)
	wideentity.SetPageSize(s, 2)
	ctx := context.Background()
	a, b := namesInTwoParts(5)
	const props = 100
	entity := func(v int64) table.Dynamic {
		d := bag(props, 0)
		for name := range d.Properties {
			d.Properties[name] = v
		}
		d.Properties["N"] = v
		d.Properties[a], d.Properties[b] = v, v
		return d
	}
	if _, err := s.Insert(ctx, at("p", "e", entity(0))); err != nil {
		t.Fatal(err)
	}
	f.ft.Reset()
	if _, err := s.Get(ctx, "p", "e"); err != nil || f.ft.Count() != 4 {
		t.Fatalf("Get in pages of 2 = %v in %d round trips, want 4", err, f.ft.Count())
	}
	each := modelcheck.Steps(40, 300)
	writers := map[string]func(i int) error{
		"whole rewrites": func(i int) error {
			_, err := s.Update(ctx, at("p", "e", entity(int64(i+1))), azcore.ETagAny, table.Replace)
			return err
		},
		"Fields update": func(i int) error {
			v := table.Dynamic{Properties: map[string]any{a: int64(-i), b: int64(-i)}}
			_, err := s.Update(ctx, at("p", "e", v), azcore.ETagAny, table.Fields(a, b))
			return err
		},
	}
	for _, phase := range []string{"whole rewrites", "Fields update"} {
		write := writers[phase]
		var done atomic.Bool
		var reads atomic.Int64
		errs := make(chan error, 8)
		var wg sync.WaitGroup
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !done.Load() {
					e, err := s.Get(ctx, "p", "e")
					if errors.Is(err, wideentity.ErrInconsistent) {
						continue // torn past the policy's re-reads: never a mix
					}
					if err != nil {
						errs <- err
						return
					}
					n := e.Value.Properties["N"]
					for i := range props {
						if v := e.Value.Properties[fmt.Sprintf("P%04d", i)]; v != n {
							errs <- fmt.Errorf("a mix of whole-entity writes: P%04d = %v, N = %v", i, v, n)
							return
						}
					}
					if e.Value.Properties[a] != e.Value.Properties[b] {
						errs <- fmt.Errorf("half a Fields update: %s = %v, %s = %v", a, e.Value.Properties[a], b, e.Value.Properties[b])
						return
					}
					reads.Add(1)
				}
			}()
		}
		for i := range each {
			if err := write(i); err != nil {
				t.Fatal(err)
			}
		}
		done.Store(true)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("%s: %v", phase, err)
		}
		t.Logf("%s: %d consistent reads of 3 pages during %d writes", phase, reads.Load(), each)
	}
}
