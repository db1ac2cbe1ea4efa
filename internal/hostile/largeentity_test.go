package hostile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/hostile"
	"github.com/tablekit/tablekit/internal/modelcheck"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/largeentity"
	"github.com/tablekit/tablekit/patterns/table"
)

// doc is the largeentity test's entity: Body always goes to a blob.
type doc struct {
	Dept string `table:",pk"`
	ID   string `table:",rk"`
	Name string
	Body []byte `largeentity:"always"`
}

// TestHostileModelLargeEntity: tenant A keeps documents in partition HR
// of a Store whose bodies live in blobs, with random inserts, updates,
// modifies and deletes. The attacker, holding partition Sales, uses the
// Store there and plants pointers in its rows: HR's pointers as stored,
// any blob of the container (a payroll file beside the Store's blobs), a
// path out of its own directory, its own blob with an oversize, wrong or
// malformed size or hash; an operator sweeps past Grace. After every
// step: no Get or Range of Sales returns HR's data or any byte of a
// foreign blob, and no operation of Sales or the Sweep sends a request
// naming one of HR's blobs or the payroll file; HR reads exactly as the
// model says; HR's current blobs and the payroll file are all there,
// unchanged. 60 steps in make test, 1,000 in make soak.
func TestHostileModelLargeEntity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := testrig.New(t)
	tc := r.Table()
	blobs := r.Container()
	rawBlobs := r.BlobService(nil).ServiceClient().NewContainerClient(path.Base(blobs.URL()))
	var offset atomic.Int64 // the Sweep's clock, past Grace
	s, err := largeentity.New[doc](testrig.NewTable[table.Dynamic](t, tc), blobs, &largeentity.Options[doc]{Retry: &testrig.Fast,
		Now: func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }})
	if err != nil {
		t.Fatal(err)
	}
	raw := r.Clean(tc) // the attacker's client
	const payroll = "secret/payroll.csv"
	payrollBody := []byte(secret + ": salaries")
	if err := hostile.Blob(ctx, rawBlobs, payroll, payrollBody); err != nil {
		t.Fatal(err)
	}
	tr := newTrace(t)
	model := map[string]doc{}
	hrBlobs := map[string]bool{payroll: true} // every blob HR ever had, and the payroll file
	version := 0
	hrDoc := func(rnd *rand.Rand, id string) doc {
		version++
		body := bytes.Repeat([]byte(fmt.Sprintf("%s-%d;", secret, version)), 1+rnd.IntN(300))
		return doc{Dept: "HR", ID: id, Name: fmt.Sprintf("%s-%d", secret, version), Body: body}
	}
	ids := []string{"1", "2", "3", "4"}
	remember := func(bs []largeentity.Blob) {
		for _, b := range bs {
			hrBlobs[b.Name] = true
		}
	}
	// foreign checks that the requests sent since the last Reset name none
	// of HR's blobs nor the payroll file.
	foreign := func(step int, what string) {
		for _, q := range r.Faults.Requests() {
			u, err := url.Parse(q.URL) // Path is unescaped: a blob name's '/' is %2F in some requests
			if err != nil {
				tr.fatalf("step %d: %s sent %s", step, what, q.URL)
			}
			for name := range hrBlobs {
				if strings.Contains(u.Path, name) {
					tr.fatalf("step %d: %s sent %s %s, a blob not its own", step, what, q.Method, q.URL)
				}
			}
		}
	}
	checkSales := func(step int) {
		r.Faults.Reset()
		sentinels := map[string]error{"ErrForeignBlob": largeentity.ErrForeignBlob, "ErrCorrupt": largeentity.ErrCorrupt, "ErrNotFound": table.ErrNotFound}
		for _, id := range ids {
			e, err := s.Get(ctx, "Sales", id, nil)
			tr.outcome("Get(Sales)", err, sentinels)
			if leaks(e) || bytes.Contains(e.Value.Body, []byte(secret)) || err == nil && (e.PartitionKey != "Sales" || e.Value.Dept != "Sales") {
				tr.fatalf("step %d: Get(Sales, %s) returned HR's data: %+v, %v", step, id, e, err)
			}
		}
		for e, err := range s.Range(ctx, "Sales", "", "", nil) {
			tr.outcome("Range(Sales)", err, sentinels)
			if leaks(e) || err == nil && (e.PartitionKey != "Sales" || e.Value.Dept != "Sales") {
				tr.fatalf("step %d: Range(Sales) returned HR's data: %+v, %v", step, e, err)
			}
		}
		foreign(step, "reading Sales")
	}
	checkHR := func(step int) {
		for _, id := range ids {
			e, err := s.Get(ctx, "HR", id, nil)
			want, ok := model[id]
			switch {
			case !ok && !errors.Is(err, table.ErrNotFound):
				tr.fatalf("step %d: Get(HR, %s) = %+v, %v; want ErrNotFound", step, id, e, err)
			case ok && (err != nil || e.PartitionKey != "HR" || e.RowKey != id || e.Value.Dept != "HR" || e.Value.ID != id || e.Value.Name != want.Name || !bytes.Equal(e.Value.Body, want.Body)):
				tr.fatalf("step %d: Get(HR, %s) = %q, %v; want %q", step, id, e.Value.Name, err, want.Name)
			case ok:
				for _, b := range e.Blobs {
					got, err := hostile.ReadBlob(ctx, rawBlobs, b.Name)
					if err != nil || !bytes.Equal(got, want.Body) {
						tr.fatalf("step %d: HR/%s's blob %s: %d bytes, %v", step, id, b.Name, len(got), err)
					}
				}
			}
		}
		var got []string
		for e, err := range s.Range(ctx, "HR", "", "", nil) {
			if err != nil {
				tr.fatalf("step %d: Range(HR): %v", step, err)
			}
			got = append(got, e.Value.Name+"/"+fmt.Sprint(len(e.Value.Body)))
		}
		var want []string
		for _, id := range ids {
			if d, ok := model[id]; ok {
				want = append(want, d.Name+"/"+fmt.Sprint(len(d.Body)))
			}
		}
		if !slices.Equal(got, want) {
			tr.fatalf("step %d: Range(HR) = %q, want %q", step, got, want)
		}
		if b, err := hostile.ReadBlob(ctx, rawBlobs, payroll); err != nil || !bytes.Equal(b, payrollBody) {
			tr.fatalf("step %d: the payroll file: %q, %v", step, b, err)
		}
	}
	// pointer returns a pointer the attacker plants in Sales/id.
	pointer := func(rnd *rand.Rand, id string) (what, name string, size int64, sum string) {
		own := ""
		if d, err := testrig.NewTable[table.Dynamic](t, raw).Get(ctx, "Sales", id, nil); err == nil { // its own pointer, as stored
			var b largeentity.Blob
			if p, ok := d.Value.Properties[largeentity.PointerPrefix+"Body"].(string); ok && json.Unmarshal([]byte(p), &b) == nil {
				own, size, sum = b.Name, b.Size, b.SHA256
			}
		}
		hr := ""
		if d, err := testrig.NewTable[table.Dynamic](t, raw).Get(ctx, "HR", ids[rnd.IntN(len(ids))], nil); err == nil { // HR's, learned somehow
			var b largeentity.Blob
			if p, ok := d.Value.Properties[largeentity.PointerPrefix+"Body"].(string); ok && json.Unmarshal([]byte(p), &b) == nil {
				hr = b.Name
				if rnd.IntN(2) == 0 {
					size, sum = b.Size, b.SHA256
				}
			}
		}
		if sum == "" {
			size, sum = 10, strings.Repeat("0", 64)
		}
		dir := own[:strings.LastIndex(own, "/")+1]
		switch k := rnd.IntN(8); {
		case k < 2 && hr != "":
			return "HR's blob", hr, size, sum
		case k < 3:
			return "the payroll file", payroll, int64(len(payrollBody)), sum
		case k < 4 && own != "" && hr != "":
			up := strings.Repeat("../", strings.Count(dir, "/"))
			return "a path out of its directory", dir + up + hr, size, sum
		case k < 5 && own != "":
			return "an oversize size", own, largeentity.MaxValueSize + 1 + rnd.Int64N(1<<40), sum
		case k < 6 && own != "":
			return "a wrong size", own, size + 1, sum
		case k < 7 && own != "":
			return "a wrong hash", own, size, strings.Repeat("a", 64)
		default:
			return "garbage", []string{"", "/", "..", strings.Repeat("x", 2000)}[rnd.IntN(4)], -1, "zz"
		}
	}

	modelcheck.Run(t, 60, 1000, func(t *testing.T, rnd *rand.Rand, step int) {
		tr.t = t
		id := ids[rnd.IntN(len(ids))]
		_, exists := model[id]
		switch k := rnd.IntN(20); {
		case k < 3:
			v := hrDoc(rnd, id)
			tr.do(step, "Insert HR/"+id, func() {
				res, err := s.Insert(ctx, v)
				switch {
				case exists && errors.Is(err, table.ErrAlreadyExists):
				case !exists && err == nil:
					model[id] = v
					remember(res.Blobs)
				default:
					tr.fatalf("step %d: Insert(HR/%s) (exists %v): %v", step, id, exists, err)
				}
			})
		case k < 5:
			v := hrDoc(rnd, id)
			tr.do(step, "Update HR/"+id, func() {
				res, err := s.Update(ctx, v, azcore.ETagAny)
				switch {
				case !exists && errors.Is(err, table.ErrNotFound):
				case exists && err == nil:
					model[id] = v
					remember(res.Blobs)
				default:
					tr.fatalf("step %d: Update(HR/%s) (exists %v): %v", step, id, exists, err)
				}
			})
		case k < 6:
			v := hrDoc(rnd, id)
			tr.do(step, "Modify HR/"+id, func() {
				e, err := s.Modify(ctx, "HR", id, func(d *doc) error { *d = v; return nil })
				switch {
				case !exists && errors.Is(err, table.ErrNotFound):
				case exists && err == nil:
					model[id] = v
					remember(e.Blobs)
				default:
					tr.fatalf("step %d: Modify(HR/%s) (exists %v): %v", step, id, exists, err)
				}
			})
		case k < 7:
			tr.do(step, "Delete HR/"+id, func() {
				err := s.Delete(ctx, "HR", id, azcore.ETagAny)
				switch {
				case !exists && errors.Is(err, table.ErrNotFound):
				case exists && err == nil:
					delete(model, id)
				default:
					tr.fatalf("step %d: Delete(HR/%s) (exists %v): %v", step, id, exists, err)
				}
			})
		case k < 10: // the attacker writes through the Store in Sales
			v := doc{Dept: "Sales", ID: id, Name: "evil", Body: bytes.Repeat([]byte("evil;"), 1+rnd.IntN(100))}
			r.Faults.Reset()
			op := []string{"Insert", "Update", "Delete", "Modify"}[rnd.IntN(4)]
			tr.do(step, op+" Sales/"+id, func() {
				var err error
				switch op {
				case "Insert":
					_, err = s.Insert(ctx, v)
				case "Update":
					_, err = s.Update(ctx, v, azcore.ETagAny)
				case "Delete":
					err = s.Delete(ctx, "Sales", id, azcore.ETagAny)
				default:
					var e largeentity.Entity[doc]
					e, err = s.Modify(ctx, "Sales", id, func(d *doc) error { d.Name += "+"; return nil })
					if leaks(e) {
						tr.fatalf("step %d: Modify(Sales/%s) returned HR's data: %+v", step, id, e)
					}
				}
				tr.outcome(op+"(Sales)", err, map[string]error{"ErrForeignBlob": largeentity.ErrForeignBlob, "ErrCorrupt": largeentity.ErrCorrupt, "ErrNotFound": table.ErrNotFound, "ErrAlreadyExists": table.ErrAlreadyExists})
			})
			foreign(step, op+" Sales/"+id)
		case k < 17: // the attacker plants a pointer in Sales
			what, name, size, sum := pointer(rnd, id)
			tr.do(step, fmt.Sprintf("plant pointer Sales/%s -> %s (%s, %d)", id, name, what, size), func() {
				var err error
				if what == "garbage" && rnd.IntN(2) == 0 {
					err = hostile.Row(ctx, raw, "Sales", id, map[string]any{largeentity.PointerPrefix + "Body": []string{"{", "null", "[]", `{"blob":7}`}[rnd.IntN(4)]})
				} else {
					err = hostile.Pointer(ctx, raw, "Sales", id, "Body", name, size, sum)
				}
				if err != nil {
					t.Fatal(err)
				}
			})
		default: // an operator sweeps, past Grace
			r.Faults.Reset()
			tr.do(step, "Sweep", func() {
				offset.Store(int64(2 * time.Hour /* largeentity's default grace */))
				defer offset.Store(0)
				res, err := s.Sweep(ctx)
				if err != nil {
					tr.fatalf("step %d: Sweep: %v", step, err)
				}
				tr.count(fmt.Sprintf("Sweep: %d deleted", res.Deleted))
			})
			// The Sweep lists the container and reads HR's rows; it must
			// neither read nor delete HR's current blobs, nor the payroll.
			for _, q := range r.Faults.Requests() {
				if u, err := url.Parse(q.URL); err != nil || q.Method == "DELETE" && strings.Contains(u.Path, payroll) {
					tr.fatalf("step %d: Sweep sent %s %s", step, q.Method, q.URL)
				}
			}
		}
		tr.do(step, "check Sales", func() { checkSales(step) })
		tr.do(step, "check HR", func() { checkHR(step) })
	})
}
