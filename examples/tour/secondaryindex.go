package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/tablekit/tablekit/patterns/secondaryindex"
	"github.com/tablekit/tablekit/patterns/table"
)

// staff is the tour's employee as a secondary index Store keeps it.
type staff struct {
	Department string `table:",pk"`
	ID         string `table:",rk"`
	FirstName  string
	LastName   string
	Email      string
}

// secondaryIndex finds employees by email and by last name within their
// department: copies under other RowKeys, written in the same transaction.
func (t *tour) secondaryIndex(ctx context.Context) error {
	tbl, err := table.New[table.Dynamic](table.NewClient(t.svc, t.name), nil)
	if err != nil {
		return err
	}
	people, err := secondaryindex.New(tbl, &secondaryindex.Options[staff]{
		Primary: "empid",
		Indexes: []secondaryindex.Index[staff]{
			{Name: "email", Unique: true, On: []string{"Email"}},
			{Name: "name", Holds: secondaryindex.KeysOnly, On: []string{"LastName", "FirstName"}},
		},
	})
	if err != nil {
		return err
	}
	for _, s := range []staff{
		{Department: "Support", ID: "000301", FirstName: "Kim", LastName: "Lee", Email: "leek@contoso.com"},
		{Department: "Support", ID: "000302", FirstName: "Max", LastName: "Lee", Email: "leem@contoso.com"},
	} {
		if _, err := people.Insert(ctx, s); err != nil {
			return err
		}
	}
	t.say("2 inserts, 1 transaction each: the row empid!000301 and its copies email!leek@contoso.2Ecom")
	t.say("and name!Lee!Kim!000301 (whole copy; keys only), all in partition Support")
	kim, err := people.Lookup(ctx, "Support", "email", "leek@contoso.com", nil)
	if err != nil {
		return err
	}
	t.say("Lookup by email leek@contoso.com: %s %s (1 point query of the copy)", kim.Value.FirstName, kim.Value.LastName)
	var lees []string
	for s, err := range people.Find(ctx, "Support", "name", []any{"Lee"}, nil) {
		if err != nil {
			return err
		}
		lees = append(lees, s.Value.FirstName)
	}
	t.say("Find last name Lee: %v (1 range query, then the primaries read in parallel)", lees)
	_, err = people.Modify(ctx, "Support", "000302", func(s *staff) error { s.Email = "leek@contoso.com"; return nil })
	if !errors.Is(err, secondaryindex.ErrDuplicate) {
		return fmt.Errorf("a duplicate email was not refused: %v", err)
	}
	t.say("giving Max Kim's email: refused (unique index), nothing written")
	d, err := people.Check(ctx, "Support")
	if err != nil || !d.Clean() {
		return fmt.Errorf("drift: %+v, %v", d, err)
	}
	t.say("Check: %d entities, their copies exactly right", d.Entities)
	return nil
}
