package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/largeentity"
	"github.com/tablekit/tablekit/patterns/logtail"
	"github.com/tablekit/tablekit/patterns/secondaryindex"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/retry"
)

// Employee is the guide's employee: PartitionKey the department, RowKey
// the id. Its photo is too large for an entity: it lives in a blob
// (largeentity), the employee row holding its name, size and SHA-256.
type Employee struct {
	Department string `table:",pk"`
	ID         string `table:",rk"`
	FirstName  string
	LastName   string
	Email      string
	Office     string
	Photo      []byte `largeentity:"offload"`
}

// Change is one entry of a department's change log (logtail): which
// employee, what happened. The log lives in the department's partition,
// under RowKeys "log!<inverted ticks>...", so an entry is written in the
// same transaction as the change it records.
type Change struct {
	Employee string
	What     string
}

// MoveOut is the intent that finishes a department move: remove the
// employee from the department it left.
type MoveOut struct {
	From, To, ID string
}

var moveOut = eventual.NewKind[MoveOut]("directory-move-out")

// Clients are the storage the directory keeps: the directory table
// (employees, their same-partition index copies, the change logs, the
// commit records of intents), the offices table (the organisation-wide
// index by office), the intents' queue and its poison queue, and the
// photos' container.
type Clients struct {
	People, Offices *aztables.Client
	Queue, Poison   *azqueue.QueueClient
	Photos          *container.Client
}

// Directory is the employee directory: every write below is all or
// nothing across the patterns it touches.
type Directory struct {
	client *aztables.Client
	People *secondaryindex.Store[Employee]
	Photos *largeentity.Store[Employee]
	Log    *logtail.Log[Change]
	Queue  *eventual.Queue
	// Retry is the policy of the read-modify-write loops (a rename racing
	// another writer).
	Retry   retry.Policy
	offices bool // the office index is kept
}

// Open builds the directory over c. commitWindow is how long a write's
// intents stay reserved while its transaction is sent (0: the default,
// 30 s).
func Open(c Clients, commitWindow time.Duration) (*Directory, error) {
	return open(c, commitWindow, true)
}

// open is Open, without the office index unless withOffices (the
// benchmarks compare the same-partition writes alone).
func open(c Clients, commitWindow time.Duration, withOffices bool) (*Directory, error) {
	people, err := table.New[table.Dynamic](c.People, nil)
	if err != nil {
		return nil, err
	}
	entries, err := table.New[Change](c.People, nil)
	if err != nil {
		return nil, err
	}
	d := &Directory{client: c.People, Retry: retry.Default, offices: withOffices}
	if d.Queue, err = eventual.New(c.Queue, c.Poison, &eventual.Options{Tables: []*aztables.Client{c.People}, CommitWindow: commitWindow}); err != nil {
		return nil, err
	}
	// Photos over 32 KiB go to blobs, named after the employee row.
	if d.Photos, err = largeentity.New[Employee](people, c.Photos, nil); err != nil {
		return nil, err
	}
	indexes := []secondaryindex.Index[Employee]{
		// Unique within the department, in its partition: strongly
		// consistent (one transaction with the employee).
		{Name: "email", Unique: true, Holds: secondaryindex.Listed, Fields: []string{"FirstName", "LastName", "Office"},
			On: []string{"Email"}},
		{Name: "lastname", Holds: secondaryindex.Listed, Fields: []string{"FirstName", "LastName", "Email"},
			On: []string{"LastName", "FirstName"}},
	}
	if withOffices {
		offices, err := table.New[table.Dynamic](c.Offices, nil)
		if err != nil {
			return nil, err
		}
		// Organisation-wide, in one partition of the offices table: kept
		// by the worker, eventually consistent.
		indexes = append(indexes, secondaryindex.Index[Employee]{Name: "office", Where: secondaryindex.OtherPartition, Table: offices,
			Partition: func(string) string { return "offices" }, Holds: secondaryindex.Listed, Fields: []string{"FirstName", "LastName"},
			On: []string{"Office"}})
	}
	d.People, err = secondaryindex.New(people, &secondaryindex.Options[Employee]{Primary: "empid", Indexes: indexes, Queue: d.Queue, Large: d.Photos})
	if err != nil {
		return nil, err
	}
	if d.Log, err = logtail.New(entries, &logtail.Options{Prefix: "log"}); err != nil {
		return nil, err
	}
	return d, nil
}

// Worker returns the worker of the directory's intents (the office index,
// the end of department moves): run it in this process or any other.
func (d *Directory) Worker(opts *eventual.WorkerOptions) (*eventual.Worker, error) {
	hs := []eventual.Handler{moveOut.Handle(d.finishMove)}
	if d.offices {
		hs = append(hs, d.People.Handler())
	}
	return eventual.NewWorker(d.Queue, hs, opts)
}

// logged is the change-log entry of a write in department dept, as a
// change that joins the write's transaction.
func (d *Directory) logged(dept, id, what string) table.Change {
	return table.Change{By: "change log", Ops: []table.Op{d.Log.AppendOp(dept, Change{Employee: id, What: what})}}
}

// Hire adds e: its photo uploaded first, then one transaction with the
// employee, its email and last-name copies, its log entry and the commit
// record of its office intent. ErrDuplicate when the department has its
// email, table.ErrAlreadyExists when it has its id: nothing written.
func (d *Directory) Hire(ctx context.Context, e Employee) error {
	ch, err := d.People.InsertOps(ctx, e)
	if err != nil {
		return err
	}
	_, err = d.Queue.Apply(ctx, d.client, ch, d.logged(e.Department, e.ID, "hired"))
	return err
}

// Rename gives employee (dept, id) a new name: one read, then one
// transaction with the employee, its moved last-name copy, its refreshed
// email copy and its log entry (and the office intent, which refreshes the
// office copy's names). The photo is neither read nor written. A writer
// in between sends it back to the read.
func (d *Directory) Rename(ctx context.Context, dept, id, first, last string) error {
	p := d.Retry
	p.Retryable = retry.RetryOn412
	return p.Do(ctx, func(ctx context.Context) error {
		var was string
		ch, err := d.People.ModifyOps(ctx, dept, id, func(e *Employee) error {
			was = e.FirstName + " " + e.LastName
			e.FirstName, e.LastName = first, last
			return nil
		})
		if err != nil {
			return err
		}
		_, err = d.Queue.Apply(ctx, d.client, ch, d.logged(dept, id, fmt.Sprintf("renamed from %s to %s %s", was, first, last)))
		return err
	})
}

// Move moves employee (dept, id) to department to, a change across
// partitions: one Commit writes the employee in to (its photo uploaded
// under its new keys first), its copies and its "moved in" log entry, with
// two intents: the office index's, and the move's end, which a worker
// carries out (removing the employee from dept, with its copies, and
// logging "moved out" there, in one transaction). Until the worker has
// run, readers see the employee in both departments. Nothing happens when
// to already has the id or the email.
func (d *Directory) Move(ctx context.Context, dept, id, to string) error {
	cur, err := d.People.Get(ctx, dept, id)
	if err != nil {
		return err
	}
	moved := cur.Value
	moved.Department = to
	ch, err := d.People.InsertOps(ctx, moved)
	if err != nil {
		return err
	}
	end := table.Change{By: "move", Intents: []table.Intent{moveOut.New(MoveOut{From: dept, To: to, ID: id})}}
	_, err = d.Queue.Apply(ctx, d.client, ch, d.logged(to, id, "moved in from "+dept), end)
	return err
}

// finishMove is the worker's half of a move: the employee leaves the
// department it moved from, with its copies, and the log there says so,
// in one transaction (with the office intent). Idempotent: an employee
// already gone is done. The move wins over a write made to the old
// department's row while it runs.
func (d *Directory) finishMove(ctx context.Context, in eventual.Intent[MoveOut]) error {
	p := in.Payload
	ch, err := d.People.DeleteOps(ctx, p.From, p.ID, azcore.ETagAny)
	if errors.Is(err, table.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = d.Queue.Apply(ctx, d.client, ch, d.logged(p.From, p.ID, "moved to "+p.To))
	return err
}

// Fire removes employee (dept, id): one read, then one transaction with
// the employee, its copies, its log entry and the office intent. The
// photo's blob is left to Sweep.
func (d *Directory) Fire(ctx context.Context, dept, id string) error {
	ch, err := d.People.DeleteOps(ctx, dept, id, azcore.ETagAny)
	if err != nil {
		return err
	}
	_, err = d.Queue.Apply(ctx, d.client, ch, d.logged(dept, id, "left"))
	return err
}

// Page is one page of a department's employees, names and offices only
// (no photo read), and the cursor of the next.
func (d *Directory) Page(ctx context.Context, dept string, size int, cursor table.Cursor) (table.Page[secondaryindex.Entity[Employee]], error) {
	return d.People.ListPage(ctx, dept, cursor, &secondaryindex.ListOptions{PageSize: size, Select: []string{"FirstName", "LastName", "Office"}})
}

// InOffice returns the employees of every department who work in office:
// the organisation-wide index, one range query.
func (d *Directory) InOffice(ctx context.Context, office string) ([]secondaryindex.Entity[Employee], error) {
	return table.Collect(d.People.Find(ctx, "", "office", office, nil))
}
