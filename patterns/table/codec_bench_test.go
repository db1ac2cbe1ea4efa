package table

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// benchEntity has 10 properties of the common EDM types.
type benchEntity struct {
	PartitionKey, RowKey string
	Name, Email          string
	Age                  int32
	Balance              float64
	Visits               int64
	Active               bool
	Joined               time.Time
	Avatar               []byte
	Score                float64
	Notes                string
}

var benchValue = benchEntity{
	PartitionKey: "Sales", RowKey: "000223", Name: "Jo Jones", Email: "jonesj@contoso.com", Age: 29, Balance: 1234.5,
	Visits: 1 << 40, Active: true, Joined: time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC), Avatar: []byte("0123456789abcdef"),
	Score: 0.75, Notes: "a note with some <html> & \"quotes\"",
}

func edmEntity() aztables.EDMEntity {
	v := benchValue
	return aztables.EDMEntity{Entity: aztables.Entity{PartitionKey: v.PartitionKey, RowKey: v.RowKey}, Properties: map[string]any{
		"Name": v.Name, "Email": v.Email, "Age": v.Age, "Balance": v.Balance, "Visits": aztables.EDMInt64(v.Visits),
		"Active": v.Active, "Joined": aztables.EDMDateTime(v.Joined), "Avatar": aztables.EDMBinary(v.Avatar), "Score": v.Score, "Notes": v.Notes,
	}}
}

// BenchmarkCodec compares one encode plus one decode of a 10-property
// entity: tablekit's codec, aztables.EDMEntity, and encoding/json with
// map[string]any.
func BenchmarkCodec(b *testing.B) {
	b.Run("tablekit", func(b *testing.B) {
		c, err := codecFor(reflect.TypeOf(benchEntity{}))
		if err != nil {
			b.Fatal(err)
		}
		v := benchValue
		buf := make([]byte, 0, 1024)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			e, err := c.encode(buf[:0], reflect.ValueOf(&v).Elem(), v.PartitionKey, v.RowKey, nil)
			if err != nil {
				b.Fatal(err)
			}
			var out benchEntity
			if err := c.decode(e.body, reflect.ValueOf(&out).Elem(), "", nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("edmentity", func(b *testing.B) {
		e := edmEntity()
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			data, err := json.Marshal(e)
			if err != nil {
				b.Fatal(err)
			}
			var out aztables.EDMEntity
			if err := json.Unmarshal(data, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("jsonmap", func(b *testing.B) {
		v := benchValue
		m := map[string]any{
			"PartitionKey": v.PartitionKey, "RowKey": v.RowKey, "Name": v.Name, "Email": v.Email, "Age": v.Age,
			"Balance": v.Balance, "Balance@odata.type": "Edm.Double", "Visits": "1099511627776", "Visits@odata.type": "Edm.Int64",
			"Active": v.Active, "Joined": v.Joined, "Joined@odata.type": "Edm.DateTime", "Avatar": v.Avatar, "Avatar@odata.type": "Edm.Binary",
			"Score": v.Score, "Score@odata.type": "Edm.Double", "Notes": v.Notes,
		}
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			data, err := json.Marshal(m)
			if err != nil {
				b.Fatal(err)
			}
			var out map[string]any
			if err := json.Unmarshal(data, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
}
