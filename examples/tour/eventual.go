package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tablekit/tablekit/internal/reserved"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/retry"
)

// archiveEmployee is the payload of the tour's intent.
type archiveEmployee struct{ Department, ID string }

// eventualArchive moves an employee to an Archive table through a queue:
// the primary write (the employee marked as leaving) and the intent are
// committed together, and a worker does the cross-table steps.
// queues creates a queue of intents and its poison queue for a step, and
// returns a function that deletes them.
func (t *tour) queues(ctx context.Context) (q, poison *azqueue.QueueClient, drop func(), err error) {
	qo := &azqueue.ClientOptions{}
	retry.Default.ApplyTo(&qo.ClientOptions)
	qsvc, err := azqueue.NewServiceClientFromConnectionString(t.connStr, qo)
	if err != nil {
		return nil, nil, nil, err
	}
	name := fmt.Sprint("tour-", time.Now().UnixNano())
	var made []string
	drop = func() {
		for _, n := range made {
			_, _ = qsvc.DeleteQueue(context.WithoutCancel(ctx), n, nil)
		}
	}
	for _, n := range []string{name, name + "-poison"} {
		if _, err := qsvc.CreateQueue(ctx, n, nil); err != nil {
			drop()
			return nil, nil, nil, err
		}
		made = append(made, n)
	}
	return qsvc.NewQueueClient(name), qsvc.NewQueueClient(name + "-poison"), drop, nil
}

func (t *tour) eventualArchive(ctx context.Context) error {
	archiveName := t.name + "archive"
	if err := table.CreateTable(ctx, t.svc, archiveName); err != nil {
		return err
	}
	defer table.DeleteTable(context.WithoutCancel(ctx), t.svc, archiveName) //nolint:errcheck // cleanup
	qc, poison, drop, err := t.queues(ctx)
	if err != nil {
		return err
	}
	defer drop()
	archive, err := table.New[Employee](table.NewClient(t.svc, archiveName), nil)
	if err != nil {
		return err
	}
	current := t.employees.Client()
	q, err := eventual.New(qc, poison, &eventual.Options{Tables: []*aztables.Client{current}})
	if err != nil {
		return err
	}

	// The handler reconciles from Current, so a duplicate delivery is
	// harmless: copy whole (insert or replace), then delete If-Match.
	kind := eventual.NewKind[archiveEmployee]("archive-employee")
	moved := 0
	handler := kind.Handle(func(ctx context.Context, in eventual.Intent[archiveEmployee]) error {
		e, err := t.employees.Get(ctx, in.Payload.Department, in.Payload.ID, nil)
		if errors.Is(err, table.ErrNotFound) {
			return nil // already moved
		}
		if err != nil {
			return err
		}
		if _, err := archive.Upsert(ctx, e.Value, table.Replace); err != nil {
			return err
		}
		moved++
		if err := t.employees.Delete(ctx, e.PartitionKey, e.RowKey, e.ETag); !errors.Is(err, table.ErrNotFound) {
			return err
		}
		return nil // already gone (a second delivery): done
	})

	jun := Employee{Department: "Sales", ID: keys.Pad(456, 6), FirstName: "Jun", LastName: "Cao", Age: 38}
	if _, err := t.employees.Insert(ctx, jun); err != nil {
		return err
	}
	jun.Email = "leaving@contoso.com"
	res, err := q.Commit(ctx, current, []table.Op{t.employees.UpsertOp(jun, table.Merge)}, kind.New(archiveEmployee{"Sales", jun.ID}))
	if err != nil {
		return err
	}
	t.say("Commit: intent %s reserved on the queue (invisible), employee 000456 updated together with", res.Intents[0].ID[:8])
	t.say("a commit record in one transaction, message released: 3 round trips, released=%v", res.Released)
	others, err := table.Collect(t.employees.Query(ctx, &table.Query{Filter: table.PartitionKey("Sales")}))
	if err != nil {
		return err
	}
	t.say("a query of Sales returns %d employees: the commit record (RowKey %q...) is skipped", len(others), reserved.Prefix)

	w, err := eventual.NewWorker(q, []eventual.Handler{handler}, &eventual.WorkerOptions{Idle: &retry.Policy{Default: 50 * time.Millisecond, Max: 200 * time.Millisecond}})
	if err != nil {
		return err
	}
	if err := drained(ctx, w); err != nil {
		return err
	}
	_, gone := t.employees.Get(ctx, "Sales", jun.ID, nil)
	a, err := archive.Get(ctx, "Sales", jun.ID, nil)
	if err != nil || !errors.Is(gone, table.ErrNotFound) || moved != 1 {
		return fmt.Errorf("employee 000456 not archived: %v, %v", err, gone)
	}
	t.say("worker: read Current, inserted-or-replaced into Archive, deleted from Current If-Match, removed")
	t.say("the commit record, deleted the message: Archive has %s %s (%s)", a.Value.FirstName, a.Value.LastName, a.Value.Email)
	pending, err := table.Collect(q.Pending(ctx, nil))
	if err != nil {
		return err
	}
	t.say("pending intents: %d; a crash at any step would have been repaired by redelivery", len(pending))
	return nil
}

// drained runs w until it has done every intent enqueued so far (Drain),
// then stops it.
func drained(ctx context.Context, w *eventual.Worker) error {
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	if err := w.Drain(ctx); err != nil {
		return err
	}
	stop()
	return <-done
}
