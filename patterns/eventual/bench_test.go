package eventual_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/internal/cpustat"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
	"github.com/tablekit/tablekit/retry"
)

type benchPayload struct {
	PK, RK string
	N      int64
}

var benchKind = eventual.NewKind[benchPayload]("bench")

// BenchmarkWorker measures worker throughput, each intent one table write
// (an upsert), at handler concurrency 1, 8 and 32: the eventual Worker
// against the loop a careful user writes with raw azqueue and aztables
// (dequeue up to 32, a pool of handlers, base64 JSON messages, delete after
// the write), side by side on the same emulator. The queue is filled
// before the timer starts; intents/s is the metric.
func BenchmarkWorker(b *testing.B) {
	for _, conc := range []int{1, 8, 32} {
		for _, impl := range []string{"eventual", "raw"} {
			b.Run(fmt.Sprintf("conc=%d/%s", conc, impl), func(b *testing.B) {
				env := tabletest.New(b)
				qo := &azqueue.ClientOptions{}
				retry.Default.ApplyTo(&qo.ClientOptions)
				queue, poison := env.Queue(qo), env.Queue(qo)
				tc := env.Table(table.ClientOptions())
				tb, _ := table.New[table.Dynamic](tc, nil)
				q, err := eventual.New(queue, poison, nil)
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				for i := range b.N {
					if _, err := q.Enqueue(ctx, benchKind.New(benchPayload{"p", fmt.Sprint(i), int64(i)})); err != nil {
						b.Fatal(err)
					}
				}
				var done atomic.Int64
				all := make(chan struct{})
				count := func() {
					if done.Add(1) == int64(b.N) {
						close(all)
					}
				}
				runCtx, stop := context.WithCancel(ctx)
				var wg sync.WaitGroup
				b.ResetTimer()
				start := time.Now()
				cpu0, cpuOK := cpustat.Process()
				wg.Add(1)
				if impl == "eventual" {
					h := benchKind.Handle(func(ctx context.Context, in eventual.Intent[benchPayload]) error {
						_, err := tb.Upsert(ctx, table.Dynamic{PartitionKey: in.Payload.PK, RowKey: in.Payload.RK, Properties: map[string]any{"N": in.Payload.N}}, table.Replace)
						return err
					})
					w, err := eventual.NewWorker(q, []eventual.Handler{h}, &eventual.WorkerOptions{Concurrency: conc, Idle: &retry.Policy{Default: 10 * time.Millisecond, Max: 50 * time.Millisecond},
						OnEvent: func(e eventual.Event) {
							if e.Type == eventual.Processed {
								count()
							}
						}})
					if err != nil {
						b.Fatal(err)
					}
					go func() { defer wg.Done(); w.Run(runCtx) }()
				} else {
					go func() { defer wg.Done(); rawWorker(runCtx, queue, tc, conc, count) }()
				}
				<-all
				elapsed := time.Since(start)
				cpu1, _ := cpustat.Process()
				b.StopTimer()
				stop()
				wg.Wait()
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "intents/s")
				if cpuOK { // the Go client's CPU: the rest of the wall time is the emulator's
					b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(b.N), "client-µs/intent")
				}
			})
		}
	}
}

// rawWorker is the careful hand-written loop: one dequeuer feeding conc
// handlers, each decoding the base64 JSON message, upserting the entity
// and deleting the message.
func rawWorker(ctx context.Context, q *azqueue.QueueClient, tc *aztables.Client, conc int, done func()) {
	msgs := make(chan *azqueue.DequeuedMessage)
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for m := range msgs {
				raw, err := base64.StdEncoding.DecodeString(*m.MessageText)
				if err != nil {
					continue
				}
				var env struct {
					P benchPayload `json:"p"`
				}
				if json.Unmarshal(raw, &env) != nil {
					continue
				}
				ent, _ := json.Marshal(map[string]any{"PartitionKey": env.P.PK, "RowKey": env.P.RK, "N": fmt.Sprint(env.P.N), "N@odata.type": "Edm.Int64"})
				if _, err := tc.UpsertEntity(ctx, ent, &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeReplace}); err != nil {
					continue
				}
				if _, err := q.DeleteMessage(ctx, *m.MessageID, *m.PopReceipt, nil); err == nil {
					done()
				}
			}
		}()
	}
	defer func() { close(msgs); wg.Wait() }()
	idle := 0
	for ctx.Err() == nil {
		resp, err := q.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{NumberOfMessages: ptrTo(int32(min(conc, 32))), VisibilityTimeout: ptrTo(int32(30))})
		if err != nil || len(resp.Messages) == 0 {
			idle = min(idle+1, 5)
			select {
			case <-time.After(time.Duration(idle) * 10 * time.Millisecond):
			case <-ctx.Done():
			}
			continue
		}
		idle = 0
		for _, m := range resp.Messages {
			select {
			case msgs <- m:
			case <-ctx.Done():
				return
			}
		}
	}
}

// BenchmarkApplyCheck measures what Apply does before its first request:
// checking a change of 99 inserts and one intent with the commit record
// (the core's batchplan.Join, once), and making the intent's message. The test hook stops
// it at the reserve, so nothing is sent; allocs/op and B/op are the
// metrics.
func BenchmarkApplyCheck(b *testing.B) {
	env := tabletest.New(b)
	queue, poison, tc := env.Queue(nil), env.Queue(nil), env.Table(table.ClientOptions())
	q, err := eventual.New(queue, poison, &eventual.Options{Tables: []*aztables.Client{tc}})
	if err != nil {
		b.Fatal(err)
	}
	errStop := errors.New("stopped at the reserve")
	eventual.SetHook(q, func(step string) error {
		if step == "reserve" {
			return errStop
		}
		return nil
	})
	tb, err := table.New[table.Dynamic](tc, nil)
	if err != nil {
		b.Fatal(err)
	}
	ops := make([]table.Op, 99)
	for i := range ops {
		ops[i] = tb.InsertOp(table.Dynamic{PartitionKey: "p", RowKey: fmt.Sprint(i), Properties: map[string]any{"N": int64(i)}})
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		change := table.Change{By: "orders", Ops: ops, Intents: []table.Intent{benchKind.New(benchPayload{"p", "0", 0})}}
		if _, err := q.Apply(ctx, tc, change); !errors.Is(err, errStop) {
			b.Fatal(err)
		}
	}
}
