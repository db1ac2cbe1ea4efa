package hostile_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/dataseries"
	"github.com/tablekit/tablekit/patterns/encryption"
	"github.com/tablekit/tablekit/patterns/indexentity"
	"github.com/tablekit/tablekit/patterns/largeentity"
	"github.com/tablekit/tablekit/patterns/secondaryindex"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/wideentity"
	"github.com/tablekit/tablekit/retry"
)

// loopOp is one exported operation that runs a loop (a read-modify-write
// retrying its conflicts, a reread of a changing entity).
type loopOp struct {
	name string
	// reads marks an operation that sends no write: it is run only with
	// every request refused.
	reads bool
	run   func(ctx context.Context) error
}

// budgetRig gives a row fresh tables and containers whose clients send
// through the rig's Faults under one pipeline: tablekit's retry policy
// (testrig.Fast) or azcore's built-in retry.
type budgetRig struct {
	r       *testrig.Rig
	azcore  bool
	retries int // the pipeline's MaxRetries
}

func (b *budgetRig) options() azcore.ClientOptions {
	o := azcore.ClientOptions{Transport: b.r.Faults}
	if b.azcore {
		o.Retry = policy.RetryOptions{MaxRetries: int32(b.retries), RetryDelay: time.Millisecond, MaxRetryDelay: time.Millisecond}
	} else {
		testrig.Fast.ApplyTo(&o)
	}
	return o
}

// table creates a table and returns a client of it under b's pipeline.
func (b *budgetRig) table(t *testing.T) *aztables.Client {
	t.Helper()
	return b.r.TableClient(testrig.NewTable[table.Dynamic](t, b.r.Env.Table(nil)).Name(), &aztables.ClientOptions{ClientOptions: b.options()})
}

// container creates a blob container and returns a client of it under b's
// pipeline.
func (b *budgetRig) container() *container.Client {
	return b.r.Env.Container(&azblob.ClientOptions{ClientOptions: b.options()})
}

// refuse makes every request that in accepts fail as a refused connection
// does (a *url.Error, nothing sent), each a fault of its own.
func refuse(ft *faults.Transport, in func(*http.Request) bool) {
	ft.Reset()
	for range 1000 {
		ft.Inject(faults.Fault{Match: in, Err: &url.Error{Op: "Do", URL: "http://127.0.0.1:1/", Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}})
	}
}

func writes(q *http.Request) bool { return q.Method != http.MethodGet && q.Method != http.MethodHead }

// TestLoopsDoNotStackRetries: every exported operation that loops (a
// read-modify-write retrying its conflicts, a reread) runs over clients
// whose every request is refused, under tablekit's retry policy and under
// azcore's built-in retry, then (tablekit's policy) whose every write is
// refused, with the loops' own policies allowing retries. The pipeline's budget is spent once: at most
// 1 + its MaxRetries requests are refused (a loop that retried transport
// failures too made (1 + MaxRetries)^2), and the error names the refusal
// (errors.Is ECONNREFUSED) and claims no count of attempts but the true
// one: with tablekit's policy a *retry.Error whose Attempts are the
// refused requests.
func TestLoopsDoNotStackRetries(t *testing.T) {
	t.Parallel()
	for _, sdk := range []bool{false, true} {
		name := "tablekit policy"
		if sdk {
			name = "azcore retry"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				if p := recover(); p != nil { // must's, in the set-up
					t.Fatalf("set-up: %v", p)
				}
			}()
			b := &budgetRig{r: testrig.New(t), azcore: sdk, retries: testrig.Fast.MaxRetries}
			if sdk {
				b.retries = 2
			}
			ops := loopOps(t, b)
			scopes := []string{"every request", "writes"}
			if sdk {
				// azcore's retry does not tell whether a refused write was
				// sent: package table settles it with a read and a fence
				// write, requests of their own.
				scopes = scopes[:1]
			}
			for _, scope := range scopes {
				for _, op := range ops {
					if op.reads && scope == "writes" {
						continue
					}
					match := writes
					if scope == "every request" {
						match = nil
					}
					refuse(b.r.Faults, match)
					err := op.run(context.Background())
					refused := 0
					for _, q := range b.r.Faults.Requests() {
						if q.Injected {
							refused++
						}
					}
					b.r.Faults.Reset()
					what := fmt.Sprintf("%s refused, %s", scope, op.name)
					if !errors.Is(err, syscall.ECONNREFUSED) {
						t.Errorf("%s: %v, want the refused connection", what, err)
						continue
					}
					if refused > 1+b.retries {
						t.Errorf("%s: %d requests refused, want at most 1 + MaxRetries = %d (retries stacked): %v", what, refused, 1+b.retries, err)
					}
					var re *retry.Error
					switch {
					case errors.As(err, &re) && re.Attempts != refused:
						t.Errorf("%s: the error claims %d attempts, %d requests were sent: %v", what, re.Attempts, refused, err)
					case !sdk && re == nil:
						t.Errorf("%s: the error does not name the pipeline's attempts: %v", what, err)
					}
				}
			}
		})
	}
}

// loopOps builds, over b's clients, every looping operation with a loop
// policy that allows retries (testrig.Fast), on a stored entity.
func loopOps(t *testing.T, b *budgetRig) []loopOp {
	t.Helper()
	ctx := context.Background()
	fast := &testrig.Fast
	var ops []loopOp

	// table, and the patterns whose loop is table.Modify.
	tb := testrig.NewTable[rec](t, b.table(t))
	ops = append(ops, loopOp{name: "table.Modify", run: func(ctx context.Context) error {
		_, err := tb.Modify(ctx, "p", "r", func(r *rec) error { r.N++; return nil }, &table.ModifyOptions{Retry: fast})
		return err
	}})
	ks := must(encryption.NewStaticKeys("k1", map[string][]byte{"k1": bytes.Repeat([]byte{1}, 32)}))
	enc := must(encryption.New[emp](testrig.NewTable[table.Dynamic](t, b.table(t)), ks, []string{"SSN"}, nil))
	ops = append(ops, loopOp{name: "encryption.Modify", run: func(ctx context.Context) error {
		_, err := enc.Modify(ctx, "p", "r", func(e *emp) error { e.Name += "x"; return nil }, &table.ModifyOptions{Retry: fast})
		return err
	}})
	ds := must(dataseries.New[int64](testrig.NewTable[table.Dynamic](t, b.table(t)), dataseries.Hours(), &dataseries.Options{Retry: fast}))
	h := dataseries.Hours()[0]
	ops = append(ops, loopOp{name: "dataseries.Add", run: func(ctx context.Context) error { _, err := ds.Add(ctx, "p", "r", h, 1); return err }})
	must(tb.Insert(ctx, rec{PK: "p", RK: "r"}))
	must(enc.Insert(ctx, emp{Dept: "p", ID: "r", SSN: "078-05-1120"}))
	must(ds.Add(ctx, "p", "r", h, 1))

	// secondaryindex, with large values.
	stbl := testrig.NewTable[table.Dynamic](t, b.table(t))
	large := must(largeentity.New[note](stbl, b.container(), &largeentity.Options[note]{Retry: fast}))
	si := must(secondaryindex.New(stbl, &secondaryindex.Options[note]{Primary: "note", Large: large, Retry: fast,
		Indexes: []secondaryindex.Index[note]{{Name: "text", Unique: true, Holds: secondaryindex.KeysOnly, On: []string{"Text"}}}}))
	must(si.Insert(ctx, note{PK: "p", RK: "r", Text: "t", Body: []byte("body")}))
	ops = append(ops,
		loopOp{name: "secondaryindex.Modify", run: func(ctx context.Context) error {
			_, err := si.Modify(ctx, "p", "r", func(n *note) error { n.Text += "x"; return nil })
			return err
		}},
		loopOp{name: "secondaryindex.Update ETagAny", run: func(ctx context.Context) error {
			_, err := si.Update(ctx, note{PK: "p", RK: "r", Text: "u", Body: []byte("other")}, azcore.ETagAny)
			return err
		}},
		loopOp{name: "secondaryindex.Delete ETagAny", run: func(ctx context.Context) error { return si.Delete(ctx, "p", "r", azcore.ETagAny) }},
		loopOp{name: "secondaryindex.Get (large values)", reads: true, run: func(ctx context.Context) error { _, err := si.Get(ctx, "p", "r"); return err }},
	)

	// largeentity.
	le := must(largeentity.New[note](testrig.NewTable[table.Dynamic](t, b.table(t)), b.container(), &largeentity.Options[note]{Retry: fast}))
	must(le.Insert(ctx, note{PK: "p", RK: "r", Body: []byte("body")}))
	ops = append(ops,
		loopOp{name: "largeentity.Modify", run: func(ctx context.Context) error {
			_, err := le.Modify(ctx, "p", "r", func(n *note) error { n.Body = append(n.Body, 'x'); return nil })
			return err
		}},
		loopOp{name: "largeentity.Delete ETagAny", run: func(ctx context.Context) error { return le.Delete(ctx, "p", "r", azcore.ETagAny) }},
		loopOp{name: "largeentity.Get", reads: true, run: func(ctx context.Context) error { _, err := le.Get(ctx, "p", "r", nil); return err }},
	)

	// wideentity.
	we := must(wideentity.New[rec](testrig.NewTable[table.Dynamic](t, b.table(t)), &wideentity.Options[rec]{Parts: 2, Retry: fast}))
	must(we.Insert(ctx, rec{PK: "p", RK: "r"}))
	ops = append(ops,
		loopOp{name: "wideentity.Modify", run: func(ctx context.Context) error {
			_, err := we.Modify(ctx, "p", "r", func(r *rec) error { r.N++; return nil })
			return err
		}},
		loopOp{name: "wideentity.Get", reads: true, run: func(ctx context.Context) error { _, err := we.Get(ctx, "p", "r"); return err }},
	)

	// indexentity (its ETag loops over the lists).
	ix := must(indexentity.New(testrig.NewTable[person](t, b.table(t)), "Last", func(p *person) string { return p.Last }, &indexentity.Options{Retry: fast}))
	must(ix.Insert(ctx, person{Dept: "p", ID: "r", Last: "Jones"}))
	ops = append(ops,
		loopOp{name: "indexentity.Insert", run: func(ctx context.Context) error {
			_, err := ix.Insert(ctx, person{Dept: "p", ID: "s", Last: "Jones"})
			return err
		}},
		loopOp{name: "indexentity.Update ETagAny", run: func(ctx context.Context) error {
			_, err := ix.Update(ctx, person{Dept: "p", ID: "r", Last: "Lee"}, azcore.ETagAny)
			return err
		}},
		loopOp{name: "indexentity.Delete ETagAny", run: func(ctx context.Context) error { return ix.Delete(ctx, "p", "r", azcore.ETagAny) }},
	)

	// table.CreateTable's wait for a table being deleted (tablekit's
	// policy only: the rig's service client has it).
	if !b.azcore {
		svc := b.r.Service(t)
		ops = append(ops, loopOp{name: "table.CreateTable", run: func(ctx context.Context) error { return table.CreateTable(ctx, svc, "budget"+hostileSuffix()) }})
	}
	return ops
}
