package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// employee is the guide's running example.
type employee struct {
	Department, ID, FirstName, LastName, Email string
	Age                                        int
}

var employees = []employee{
	{"Sales", "000123", "Ana", "Jones", "jonesa@contoso.com", 34},
	{"Sales", "000155", "Ben", "Smith", "smithb@contoso.com", 41},
	{"Sales", "000223", "Jo", "Jones", "jonesj@contoso.com", 29},
	{"Marketing", "000108", "Cy", "Brown", "brownc@contoso.com", 52},
}

func (e employee) entity() ([]byte, error) {
	return json.Marshal(map[string]any{
		"PartitionKey": e.Department, "RowKey": e.ID,
		"FirstName": e.FirstName, "LastName": e.LastName, "Email": e.Email, "Age": e.Age,
	})
}

func (t *tour) storeEmployees(ctx context.Context) error {
	for _, e := range employees {
		body, err := e.entity()
		if err != nil {
			return err
		}
		if _, err := t.table.AddEntity(ctx, body, nil); err != nil {
			return err
		}
		t.say("inserted %s/%s %s %s", e.Department, e.ID, e.FirstName, e.LastName)
	}
	return nil
}

func (t *tour) pointQuery(ctx context.Context) error {
	resp, err := t.table.GetEntity(ctx, "Sales", "000223", nil)
	if err != nil {
		return err
	}
	var got aztables.EDMEntity
	if err := json.Unmarshal(resp.Value, &got); err != nil {
		return err
	}
	t.say("PartitionKey eq 'Sales' and RowKey eq '000223' -> %s %s, %v (the cheapest query: one entity, one round trip)",
		got.Properties["FirstName"], got.Properties["LastName"], got.Properties["Email"])
	return nil
}

func (t *tour) rangeQuery(ctx context.Context) error {
	filter := "PartitionKey eq 'Sales' and RowKey ge '000100' and RowKey lt '000200'"
	pager := t.table.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &filter})
	n := 0
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return err
		}
		for _, raw := range page.Entities {
			var e aztables.EDMEntity
			if err := json.Unmarshal(raw, &e); err != nil {
				return err
			}
			t.say("%s -> %s/%s %s", filter, e.PartitionKey, e.RowKey, e.Properties["FirstName"])
			n++
		}
	}
	if n != 2 {
		return fmt.Errorf("range query found %d employees, want 2", n)
	}
	t.say("%d employees, returned in RowKey order by one range query", n)
	return nil
}
