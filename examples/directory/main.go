// Command directory is the design guide's employee directory as one
// program, every pattern of its running example combined: employees by
// department, a unique email index and a last-name index in each
// department's partition, an organisation-wide index by office kept by a
// worker running in this process, each employee's photo as a large value
// in a blob, and a log of every change written in the same transaction as
// the change. Each write is all or nothing across the patterns it touches
// (see "Composing patterns" in package table). It runs against the
// account in AZURE_STORAGE_CONNECTION_STRING when that is set, and
// otherwise against a local Azurite emulator it starts and stops.
//
//	go run ./examples/directory
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/secondaryindex"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
	"github.com/tablekit/tablekit/retry"
)

func main() {
	err := run(context.Background(), os.Stdout)
	if stopErr := tabletest.StopShared(); err == nil {
		err = stopErr
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "directory:", err)
		os.Exit(1)
	}
}

// scratch creates the program's storage: two tables, two queues and a
// container with fresh names, deleted by the cleanup returned.
func scratch(ctx context.Context) (Clients, func(), error) {
	var c Clients
	var drops []func()
	cleanup := func() {
		for _, drop := range drops {
			drop()
		}
	}
	var err error
	var drop func()
	steps := []func() error{
		func() error { c.People, drop, err = tabletest.ScratchTable(ctx, "directory"); return err },
		func() error { c.Offices, drop, err = tabletest.ScratchTable(ctx, "offices"); return err },
		func() error { c.Queue, drop, err = tabletest.ScratchQueue(ctx, "directory"); return err },
		func() error { c.Poison, drop, err = tabletest.ScratchQueue(ctx, "directorypoison"); return err },
		func() error { c.Photos, drop, err = tabletest.ScratchContainer(ctx, "photos"); return err },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			cleanup()
			return Clients{}, nil, err
		}
		drops = append(drops, drop)
	}
	return c, cleanup, nil
}

// photo is a made-up photo of n bytes.
func photo(seed string, n int) []byte {
	return bytes.Repeat([]byte(seed), n/len(seed)+1)[:n]
}

func run(ctx context.Context, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	say := func(format string, args ...any) { fmt.Fprintf(out, "   "+format+"\n", args...) }
	step := func(title string) { fmt.Fprintf(out, "\n%s\n", title) }
	where := "the account in AZURE_STORAGE_CONNECTION_STRING"
	if os.Getenv("AZURE_STORAGE_CONNECTION_STRING") == "" {
		where = "a local Azurite emulator (in memory, free loopback ports)"
	}
	fmt.Fprintln(out, "directory: the design guide's employee directory, its patterns combined in one program")
	fmt.Fprintln(out, "Starting against", where)

	step("1. Storage: the directory table, the offices table, a queue of intents (and its poison queue), a photo container")
	c, cleanup, err := scratch(ctx)
	if err != nil {
		return err
	}
	defer cleanup()
	d, err := Open(c, 0)
	if err != nil {
		return err
	}
	w, err := d.Worker(&eventual.WorkerOptions{Idle: &retry.Policy{Default: 50 * time.Millisecond, Max: 200 * time.Millisecond}})
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	defer func() {
		stop()
		<-done
	}()
	say("in each department's partition: the employees (empid!<id>), their email and last-name copies,")
	say("the department's change log (log!<inverted ticks>...) and the commit records of intents;")
	say("the office index in one partition of the offices table; photos over 32 KiB in blobs.")
	say("A worker runs in this process for the office index and for department moves.")

	step("2. Hire four employees: each hire is one Commit of the employee, its copies, its log entry and its office intent")
	staff := []Employee{
		{Department: "Sales", ID: "000223", FirstName: "Jo", LastName: "Jones", Email: "jonesj@contoso.com", Office: "Seattle"},
		{Department: "Sales", ID: "000224", FirstName: "Kim", LastName: "Lee", Email: "leek@contoso.com", Office: "London"},
		{Department: "HR", ID: "000301", FirstName: "Max", LastName: "Lee", Email: "leem@contoso.com", Office: "Seattle"},
		{Department: "HR", ID: "000302", FirstName: "Ana", LastName: "Diaz", Email: "diaza@contoso.com", Office: "Paris"},
	}
	for i, e := range staff {
		e.Photo = photo(e.FirstName, 100<<10+i)
		if err := d.Hire(ctx, e); err != nil {
			return err
		}
	}
	say("each: the 100 KB photo uploaded to a new blob (1 round trip), then reserve the office intent,")
	say("one transaction of 5 rows (employee, email copy, last-name copy, log entry, commit record), release: 4 round trips")
	dup := Employee{Department: "Sales", ID: "000225", FirstName: "Jo", LastName: "Jonas", Email: "jonesj@contoso.com", Office: "Oslo", Photo: photo("x", 50<<10)}
	if err := d.Hire(ctx, dup); !errors.Is(err, secondaryindex.ErrDuplicate) {
		return fmt.Errorf("a taken email was not refused: %v", err)
	}
	say("hiring 000225 with Jo's email: ErrDuplicate (%s)", "the email copy's insert failed the transaction")
	dup.Email = "jonasj@contoso.com"
	dup.ID = "000223"
	if err := d.Hire(ctx, dup); !errors.Is(err, table.ErrAlreadyExists) || errors.Is(err, secondaryindex.ErrDuplicate) {
		return fmt.Errorf("a taken id was not refused as such: %v", err)
	}
	say("hiring someone else as 000223: table.ErrAlreadyExists, not ErrDuplicate: \"id taken\" is not \"email taken\"")
	say("neither wrote anything: no employee, no copy, no log entry, no intent (their photos are orphans for Sweep)")

	step("3. Lookups in a department, and across the organisation")
	jo, err := d.People.Lookup(ctx, "Sales", "email", "jonesj@contoso.com", nil)
	if err != nil {
		return err
	}
	say("Sales, email jonesj@contoso.com: %s %s in %s (1 point query of the copy, which holds no photo)", jo.Value.FirstName, jo.Value.LastName, jo.Value.Office)
	lees, err := table.Collect(d.People.Find(ctx, "HR", "lastname", []any{"Lee"}, nil))
	if err != nil {
		return err
	}
	say("HR, last name Lee: %d (%s %s), 1 range query of the copies", len(lees), lees[0].Value.FirstName, lees[0].Value.LastName)
	if err := w.Drain(ctx); err != nil {
		return err
	}
	seattle, err := d.InOffice(ctx, "Seattle")
	if err != nil {
		return err
	}
	say("office Seattle, every department: %s (the worker's copies: eventually consistent)", names(seattle))
	got, err := d.People.Get(ctx, "Sales", "000223")
	if err != nil {
		return err
	}
	sum := sha256.Sum256(got.Value.Photo)
	say("Get Sales/000223: %s %s with a %d-byte photo (SHA-256 %x..., checked against the row's pointer): 2 round trips", got.Value.FirstName, got.Value.LastName, len(got.Value.Photo), sum[:4])

	step("4. A paged listing: Sales one at a time, resumed from a cursor (a string: another process could resume it)")
	var cursor table.Cursor
	for n := 1; ; n++ {
		page, err := d.Page(ctx, "Sales", 1, cursor)
		if err != nil {
			return err
		}
		var ids []string
		for _, e := range page.Items {
			ids = append(ids, e.RowKey+" "+e.Value.FirstName+" "+e.Value.LastName)
		}
		say("page %d: %s (keys as Employee has them, no photo read; 1 round trip)", n, strings.Join(ids, ", "))
		if cursor = page.Next; cursor == "" {
			break
		}
		say("next cursor: %.40s...", cursor)
	}

	step("5. Rename Jo Jones to Jo Smith: the employee, its copies and the log entry in one transaction")
	if err := d.Rename(ctx, "Sales", "000223", "Jo", "Smith"); err != nil {
		return err
	}
	smiths, err := table.Collect(d.People.Find(ctx, "Sales", "lastname", []any{"Smith"}, nil))
	if err != nil {
		return err
	}
	if _, err := table.Collect(d.People.Find(ctx, "Sales", "lastname", []any{"Jones"}, nil)); err != nil {
		return err
	}
	say("1 read, then reserve, transaction, release (the office copy's names change too): the photo neither read nor written")
	say("last name Smith in Sales: %s; the Jones copy is gone with the same transaction", names(smiths))

	step("6. Move Kim Lee from Sales to HR: a change across partitions")
	if err := d.Move(ctx, "Sales", "000224", "HR"); err != nil {
		return err
	}
	say("one Commit in HR: Kim's row, copies and photo (uploaded under the new keys), the log entry \"moved in\",")
	say("and two intents: the office index's, and the move's end; until the worker runs, Kim is in both departments")
	if err := w.Drain(ctx); err != nil {
		return err
	}
	if _, err := d.People.Get(ctx, "Sales", "000224"); !errors.Is(err, table.ErrNotFound) {
		return fmt.Errorf("employee 000224 (Kim) is still in Sales after the worker ran: %v", err)
	}
	hr, err := table.Collect(d.People.List(ctx, "HR", &secondaryindex.ListOptions{Select: []string{"FirstName", "LastName"}}))
	if err != nil {
		return err
	}
	say("the worker removed Kim from Sales (employee, copies, \"moved to HR\" log entry: one transaction); HR now: %s", names(hr))

	step("7. Ana Diaz leaves HR")
	if err := d.Fire(ctx, "HR", "000302"); err != nil {
		return err
	}
	if err := w.Drain(ctx); err != nil {
		return err
	}
	paris, err := d.InOffice(ctx, "Paris")
	if err != nil {
		return err
	}
	say("the employee, its copies and its log entry in one transaction; the office index has %d in Paris", len(paris))

	step("8. The change logs, newest first (one range query each)")
	for _, dept := range []string{"Sales", "HR"} {
		entries, err := d.Log.Latest(ctx, dept, 10)
		if err != nil {
			return err
		}
		var lines []string
		for _, e := range entries {
			lines = append(lines, e.Value.Employee+" "+e.Value.What)
		}
		say("%s: %s", dept, strings.Join(lines, "; "))
	}

	step("9. Check and Sweep")
	drift, err := d.People.Check(ctx, "")
	if err != nil {
		return err
	}
	if !drift.Clean() {
		return fmt.Errorf("drift: %+v", drift)
	}
	say("Check: %d employees, every copy in every index exactly right", drift.Entities)
	swept, err := d.Photos.Sweep(ctx)
	if err != nil {
		return err
	}
	say("Sweep: %d photo blobs listed; the %d no employee points at (refused hires, Kim's old row, Ana) go once older than Grace (1 h)", swept.Listed, swept.Listed-drift.Entities)
	fmt.Fprintln(out, "\nDirectory complete.")
	return nil
}

// names lists the entities' first and last names.
func names(es []secondaryindex.Entity[Employee]) string {
	var out []string
	for _, e := range es {
		out = append(out, e.Value.FirstName+" "+e.Value.LastName)
	}
	return strings.Join(out, ", ")
}
