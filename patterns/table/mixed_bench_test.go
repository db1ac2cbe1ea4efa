package table

import (
	"fmt"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// Three entity types of one partition (the guide's departments and
// employees, and projects), version 2, and employees' version 1.
type benchDept struct {
	PartitionKey, RowKey string
	Name, Manager        string
	Budget               int64
}

type benchEmp struct {
	PartitionKey, RowKey string
	First, Last, Email   string
	Age                  int32
	Joined               time.Time
}

type benchEmpV1 struct {
	PartitionKey, RowKey string
	FullName, Email      string
	Age                  int32
	Joined               time.Time
}

type benchProj struct {
	PartitionKey, RowKey string
	Title                string
	Hours                float64
	Active               bool
}

// benchPage returns a 1,000-entity page of the three types in turn, as the
// service returns it (one JSON object per entity), written through
// registered Tables; with old, every other employee is of version 1.
func benchPage(b *testing.B, ts *Types, old bool) [][]byte {
	b.Helper()
	oldTypes, err := NewTypes(ts.rows.client, nil)
	if err != nil {
		b.Fatal(err)
	}
	depts, err1 := Register[benchDept](ts, "Department", &RegisterOptions{Version: 2})
	emps, err2 := Register[benchEmp](ts, "Employee", &RegisterOptions{Version: 2, Upgrades: []Upgrade{UpgradeFrom(1, func(e benchEmpV1) (benchEmp, error) {
		return benchEmp{First: e.FullName, Email: e.Email, Age: e.Age, Joined: e.Joined}, nil
	})}})
	projs, err3 := Register[benchProj](ts, "Project", &RegisterOptions{Version: 2})
	oldEmps, err4 := Register[benchEmpV1](oldTypes, "Employee", nil)
	for _, err := range []error{err1, err2, err3, err4} {
		if err != nil {
			b.Fatal(err)
		}
	}
	joined := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	page := make([][]byte, 1000)
	for i := range page {
		rk := fmt.Sprintf("%04d", i)
		var body []byte
		var err error
		switch i % 3 {
		case 0:
			body, err = benchBody(depts, benchDept{PartitionKey: "Sales", RowKey: rk, Name: "Sales", Manager: "Ann Lee", Budget: 1 << 33})
		case 1:
			if old && i%2 == 1 {
				body, err = benchBody(oldEmps, benchEmpV1{PartitionKey: "Sales", RowKey: rk, FullName: "Jo Jones", Email: "jonesj@contoso.com", Age: 29, Joined: joined})
			} else {
				body, err = benchBody(emps, benchEmp{PartitionKey: "Sales", RowKey: rk, First: "Jo", Last: "Jones", Email: "jonesj@contoso.com", Age: 29, Joined: joined})
			}
		default:
			body, err = benchBody(projs, benchProj{PartitionKey: "Sales", RowKey: rk, Title: "Rollout", Hours: 12.5, Active: true})
		}
		if err != nil {
			b.Fatal(err)
		}
		page[i] = body
	}
	return page
}

func benchBody[T any](t *Table[T], v T) ([]byte, error) {
	e, bp, err := t.encode("insert", &v, Mode{})
	if err != nil {
		return nil, err
	}
	defer release(bp)
	return append([]byte(nil), e.body...), nil
}

// BenchmarkMixedDecode decodes a 1,000-entity page of three types: through
// Types (each row resolved by its type property, into its registered Go
// type, as one query of the partition does), against the per-type way (each
// row decoded by a plain Table of its own type, as three queries of one
// type each would, knowing every row's type in advance), and with every
// other employee of version 1 (upgraded on read).
func BenchmarkMixedDecode(b *testing.B) {
	client, err := aztables.NewClientWithNoCredential("http://127.0.0.1:1/devstoreaccount1/bench", nil)
	if err != nil {
		b.Fatal(err)
	}
	newTypes := func() *Types {
		ts, err := NewTypes(client, nil)
		if err != nil {
			b.Fatal(err)
		}
		return ts
	}
	b.Run("types", func(b *testing.B) {
		ts := newTypes()
		page := benchPage(b, ts, false)
		decodeAll(b, ts, page)
	})
	b.Run("per-type", func(b *testing.B) {
		page := benchPage(b, newTypes(), false)
		depts, _ := New[benchDept](client, nil)
		emps, _ := New[benchEmp](client, nil)
		projs, _ := New[benchProj](client, nil)
		b.ReportAllocs()
		for range b.N {
			for i, raw := range page {
				var err error
				switch i % 3 {
				case 0:
					var v benchDept
					_, err = depts.decode(raw, &v, "", nil, true)
				case 1:
					var v benchEmp
					_, err = emps.decode(raw, &v, "", nil, true)
				default:
					var v benchProj
					_, err = projs.decode(raw, &v, "", nil, true)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("types-upgrading", func(b *testing.B) {
		ts := newTypes()
		page := benchPage(b, ts, true)
		decodeAll(b, ts, page)
	})
}

// decodeAll decodes page through Types' query path, b.N times.
func decodeAll(b *testing.B, ts *Types, page [][]byte) {
	b.ReportAllocs()
	for range b.N {
		for _, raw := range page {
			var v any
			if _, err := ts.rows.decode(raw, &v, "", nil, true); err != nil {
				b.Fatal(err)
			}
		}
	}
}
