package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/tablekit/tablekit/patterns/logtail"
	"github.com/tablekit/tablekit/patterns/secondaryindex"
	"github.com/tablekit/tablekit/patterns/table"
)

// logEntry is one entry of a department's change log.
type logEntry struct{ Employee, What string }

// compose writes a hire with its index copies and its change-log entry in
// one transaction: the patterns produce operations, the core joins them.
func (t *tour) compose(ctx context.Context) error {
	c := table.NewClient(t.svc, t.name)
	tbl, err := table.New[table.Dynamic](c, nil)
	if err != nil {
		return err
	}
	people, err := secondaryindex.New(tbl, &secondaryindex.Options[staff]{
		Primary: "person",
		Indexes: []secondaryindex.Index[staff]{{Name: "mail", Unique: true, On: []string{"Email"}}},
	})
	if err != nil {
		return err
	}
	entries, err := table.New[logEntry](c, nil)
	if err != nil {
		return err
	}
	changes, err := logtail.New(entries, &logtail.Options{Prefix: "changes"})
	if err != nil {
		return err
	}
	hire := func(s staff) error {
		ch, err := people.InsertOps(ctx, s)
		if err != nil {
			return err
		}
		entry := table.Change{By: "change log", Ops: []table.Op{changes.AppendOp(s.Department, logEntry{s.ID, "hired"})}}
		_, err = entries.Apply(ctx, ch, entry)
		return err
	}
	if err := hire(staff{Department: "Design", ID: "000401", FirstName: "Ida", LastName: "Berg", Email: "bergi@contoso.com"}); err != nil {
		return err
	}
	t.say("hire Ida Berg: InsertOps (her row and email copy) and the log's AppendOp joined by table.Apply:")
	t.say("one transaction of 3 rows in partition Design, 1 round trip, all or nothing")
	err = hire(staff{Department: "Design", ID: "000402", FirstName: "Ivo", LastName: "Berg", Email: "bergi@contoso.com"})
	if !errors.Is(err, secondaryindex.ErrDuplicate) {
		return fmt.Errorf("a taken email was not refused: %v", err)
	}
	log, err := changes.Latest(ctx, "Design", 10)
	if err != nil {
		return err
	}
	t.say("hire Ivo Berg with Ida's email: ErrDuplicate, and the log still has %d entry (%s %s): no entry without its change", len(log), log[0].Value.Employee, log[0].Value.What)
	t.say("examples/directory combines them all: indexes, an org-wide index, photos, logs, moves, with crash tests")
	return nil
}
