// Command archive is the design guide's eventually consistent transaction
// (pattern 3): move employee 456 from the Current table to the Archive
// table through a durable intent on a queue, with the worker in the same
// program, and show that a duplicate delivery changes nothing. It runs
// against the account in AZURE_STORAGE_CONNECTION_STRING when that is set,
// and otherwise against a local Azurite emulator it starts and stops.
//
//	go run ./examples/archive
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
	"github.com/tablekit/tablekit/retry"
)

// Employee is stored in Current (PartitionKey = department, RowKey = id)
// and, once archived, in Archive.
type Employee struct {
	table.Meta
	Department string `table:",pk"`
	ID         string `table:",rk"`
	Name       string
	Title      string
}

// ArchiveEmployee is the intent's payload: which employee to move.
type ArchiveEmployee struct {
	Department, ID string
}

var archiveKind = eventual.NewKind[ArchiveEmployee]("archive-employee")

// archiver holds the two tables the handler moves employees between.
type archiver struct {
	current, archive *table.Table[Employee]
	say              func(format string, args ...any)
}

// handle moves one employee, reconciling from the source of truth (the
// Current table) so that a duplicate or late delivery is harmless:
//
//   - not in Current: already moved (or never there); nothing to do;
//   - in Current: write it whole to Archive (Upsert with table.Replace:
//     doing it twice is doing it once), then delete it from Current if it
//     has not changed since it was read (Delete, If-Match: gone is
//     success). If it changed, the delete fails, the intent is retried, and
//     the retry copies the newer version.
func (a *archiver) handle(ctx context.Context, in eventual.Intent[ArchiveEmployee]) error {
	p := in.Payload
	e, err := a.current.Get(ctx, p.Department, p.ID, nil)
	if errors.Is(err, table.ErrNotFound) {
		a.say("worker: intent %s (delivery %d): %s/%s is not in Current: already archived, nothing to do", short(in.ID), in.DequeueCount, p.Department, p.ID)
		return nil
	}
	if err != nil {
		return err
	}
	a.say("worker: intent %s (delivery %d): read %s/%s (%s) from Current", short(in.ID), in.DequeueCount, p.Department, p.ID, e.Value.Name)
	if _, err := a.archive.Upsert(ctx, e.Value, table.Replace); err != nil {
		return err
	}
	a.say("worker: inserted or replaced it in Archive")
	if err := a.current.Delete(ctx, p.Department, p.ID, e.ETag); err != nil && !errors.Is(err, table.ErrNotFound) {
		return err
	}
	a.say("worker: deleted it from Current (If-Match the version copied)")
	return nil
}

func short(id string) string { return id[:8] }

func main() {
	err := run(context.Background())
	if stopErr := tabletest.StopShared(); err == nil {
		err = stopErr
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "archive:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	say := func(format string, args ...any) { fmt.Printf("   "+format+"\n", args...) }
	fmt.Println("archive: an eventually consistent transaction across two tables (guide pattern 3)")
	var tables [2]*table.Table[Employee] // Current, Archive
	for i, prefix := range []string{"current", "archive"} {
		c, drop, err := tabletest.ScratchTable(ctx, prefix)
		if err != nil {
			return err
		}
		defer drop()
		tables[i], _ = table.New[Employee](c, nil)
	}
	current, archive := tables[0], tables[1]
	cs, err := tabletest.ConnectionString()
	if err != nil {
		return err
	}
	qo := &azqueue.ClientOptions{}
	retry.Default.ApplyTo(&qo.ClientOptions)
	qsvc, err := azqueue.NewServiceClientFromConnectionString(cs, qo)
	if err != nil {
		return err
	}
	queueName := fmt.Sprint("archive-", time.Now().UnixNano())
	poisonName := queueName + "-poison"
	for _, n := range []string{queueName, poisonName} {
		if _, err := qsvc.CreateQueue(ctx, n, nil); err != nil {
			return err
		}
		defer qsvc.DeleteQueue(context.WithoutCancel(ctx), n, nil) //nolint:errcheck // cleanup
	}
	// No primary write is committed with the intent (Enqueue alone), so
	// the Queue needs no Options.
	q, err := eventual.New(qsvc.NewQueueClient(queueName), qsvc.NewQueueClient(poisonName), nil)
	if err != nil {
		return err
	}

	fmt.Println("\n1. Employee 456 works in Sales")
	if _, err := current.Insert(ctx, Employee{Department: "Sales", ID: "000456", Name: "Jun Cao", Title: "Account manager"}); err != nil {
		return err
	}
	say("Current has Sales/000456; Archive is empty")

	fmt.Println("\n2. Record the intent: archive employee 456 (1 round trip)")
	d := archiveKind.New(ArchiveEmployee{"Sales", "000456"})
	if _, err := q.Enqueue(ctx, d); err != nil {
		return err
	}
	say("intent %s is on the queue; nothing has moved yet (no isolation: readers see each step)", short(d.ID()))

	fmt.Println("\n3. The worker performs the idempotent steps, then deletes the message")
	a := &archiver{current: current, archive: archive, say: say}
	w, err := eventual.NewWorker(q, []eventual.Handler{archiveKind.Handle(a.handle)}, &eventual.WorkerOptions{Idle: &retry.Policy{Default: 50 * time.Millisecond, Max: 200 * time.Millisecond}})
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	if err := w.Drain(ctx); err != nil {
		return err
	}

	fmt.Println("\n4. The same intent delivered again (a crash before the delete would do this)")
	if _, err := q.Enqueue(ctx, d); err != nil {
		return err
	}
	if err := w.Drain(ctx); err != nil {
		return err
	}
	stop()
	if err := <-done; err != nil {
		return err
	}

	fmt.Println("\n5. The result")
	_, inCurrent := current.Get(ctx, "Sales", "000456", nil)
	moved, err := archive.Get(ctx, "Sales", "000456", nil)
	if err != nil || !errors.Is(inCurrent, table.ErrNotFound) {
		return fmt.Errorf("employee 456 was not moved: archive %v, current %v", err, inCurrent)
	}
	say("Current: no employee 456; Archive: %s, %s", moved.Value.Name, moved.Value.Title)
	say("queue empty, the worker stopped gracefully")
	return nil
}
