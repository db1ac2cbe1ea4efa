package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/table"
)

// Department is stored in its employees' partition, under RowKey "DEPT".
type Department struct {
	Name    string `table:",pk"`
	Key     string `table:",rk"`
	Manager string
	Budget  int64
}

// EngineerV1 is how an older release stored engineers: one name field.
type EngineerV1 struct {
	Department string `table:",pk"`
	ID         string `table:",rk"`
	Name       string
}

// Engineer is the current release's shape (version 2).
type Engineer struct {
	table.Meta
	Department string `table:",pk"`
	ID         string `table:",rk"`
	First      string
	Last       string
}

func (t *tour) entityTypes(ctx context.Context) error {
	client := table.NewClient(t.svc, t.name)
	// The older release: version 1 of Engineer.
	before, err := table.NewTypes(client, nil)
	if err != nil {
		return err
	}
	oldEngineers, err := table.Register[EngineerV1](before, "Engineer", nil)
	if err != nil {
		return err
	}
	for i, name := range []string{"Grace Hopper", "Alan Kay"} {
		if _, err := oldEngineers.Insert(ctx, EngineerV1{Department: "Engineering", ID: keys.Pad(uint64(300+i), 6), Name: name}); err != nil {
			return err
		}
	}

	// This release: Department, and Engineer at version 2 with the upgrade
	// from version 1.
	types, err := table.NewTypes(client, nil)
	if err != nil {
		return err
	}
	depts, err := table.Register[Department](types, "Department", nil)
	if err != nil {
		return err
	}
	engineers, err := table.Register[Engineer](types, "Engineer", &table.RegisterOptions{
		Version: 2,
		Upgrades: []table.Upgrade{table.UpgradeFrom(1, func(e EngineerV1) (Engineer, error) {
			first, last, _ := strings.Cut(e.Name, " ")
			return Engineer{First: first, Last: last}, nil
		})},
	})
	if err != nil {
		return err
	}
	if _, err := depts.Insert(ctx, Department{Name: "Engineering", Key: "DEPT", Manager: "Ada Lovelace", Budget: 5_000_000}); err != nil {
		return err
	}
	if _, err := engineers.Insert(ctx, Engineer{Department: "Engineering", ID: keys.Pad(302, 6), First: "Barbara", Last: "Liskov"}); err != nil {
		return err
	}
	t.say("one partition holds a Department and Engineers of two versions; each row records its type: EntityType = \"Department.1\", \"Engineer.1\" or \"Engineer.2\"")

	var lines []string
	for v, err := range types.Query(ctx, &table.Query{Filter: table.PartitionKey("Engineering")}) {
		if err != nil {
			return err
		}
		switch e := v.(type) {
		case Department:
			lines = append(lines, fmt.Sprintf("Department %s, managed by %s", e.Name, e.Manager))
		case Engineer:
			lines = append(lines, fmt.Sprintf("Engineer %s: %s, %s", e.ID, e.Last, e.First))
		default:
			return fmt.Errorf("unexpected %T", v)
		}
	}
	t.say("one query, one round trip, each row into its Go type (a type switch), version 1 rows upgraded on the way:")
	for _, l := range lines {
		t.say("  %s", l)
	}
	only, err := table.Collect(engineers.Query(ctx, &table.Query{Filter: table.PartitionKey("Engineering")}))
	if err != nil {
		return err
	}
	t.say("the Engineer table alone selects its type on the server (EntityType = 'Engineer', or between 'Engineer.' and 'Engineer/'): %d engineers", len(only))

	p, err := types.Migrate(ctx, &table.MigrateOptions{Query: &table.Query{Filter: table.PartitionKey("Engineering")}})
	if err != nil {
		return err
	}
	t.say("Migrate rewrote the old rows as version 2 (read %d, upgraded %d), each conditioned on the ETag it read, resumable from its cursor", p.Read, p.Upgraded)
	if p.Upgraded != 2 {
		return fmt.Errorf("migrate upgraded %d rows, want 2", p.Upgraded)
	}
	return nil
}
