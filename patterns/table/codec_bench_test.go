package table

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/cpustat"

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

// benchStruct is the careful encoding/json equivalent of benchEntity:
// json tags, and "X@odata.type" annotation fields for the types plain JSON
// would store differently (Int64 as a string, Double, DateTime, Binary).
type benchStruct struct {
	PartitionKey string    `json:"PartitionKey"`
	RowKey       string    `json:"RowKey"`
	Name         string    `json:"Name"`
	Email        string    `json:"Email"`
	Age          int32     `json:"Age"`
	Balance      float64   `json:"Balance"`
	BalanceType  string    `json:"Balance@odata.type"`
	Visits       int64     `json:"Visits,string"`
	VisitsType   string    `json:"Visits@odata.type"`
	Active       bool      `json:"Active"`
	Joined       time.Time `json:"Joined"`
	JoinedType   string    `json:"Joined@odata.type"`
	Avatar       []byte    `json:"Avatar"`
	AvatarType   string    `json:"Avatar@odata.type"`
	Score        float64   `json:"Score"`
	ScoreType    string    `json:"Score@odata.type"`
	Notes        string    `json:"Notes"`
}

// codecLoop runs one encode plus one decode per iteration and reports
// entities/s and the process's CPU time per entity beside ns/op.
func codecLoop(b *testing.B, once func() error) {
	b.ReportAllocs()
	cpu0, ok0 := cpustat.Process()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := once(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	cpu1, ok1 := cpustat.Process()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "entities/s")
	if ok0 && ok1 {
		b.ReportMetric((cpu1-cpu0).Seconds()*1e6/float64(b.N), "cpu-us/entity")
	}
}

// BenchmarkCodec compares one encode plus one decode of a 10-property
// entity: tablekit's codec, aztables.EDMEntity, encoding/json with
// map[string]any, and encoding/json with a tagged struct (benchStruct).
// .ci/benchtable.awk prints each baseline's ratio to tablekit.
func BenchmarkCodec(b *testing.B) {
	b.Run("tablekit", func(b *testing.B) {
		c, err := codecFor(reflect.TypeOf(benchEntity{}))
		if err != nil {
			b.Fatal(err)
		}
		v := benchValue
		buf := make([]byte, 0, 1024)
		codecLoop(b, func() error {
			e, err := c.encode(buf[:0], reflect.ValueOf(&v).Elem(), v.PartitionKey, v.RowKey, nil, false, nil)
			if err != nil {
				return err
			}
			var out benchEntity
			return c.decode(e.body, reflect.ValueOf(&out).Elem(), "", nil, false)
		})
	})
	b.Run("edmentity", func(b *testing.B) {
		e := edmEntity()
		codecLoop(b, func() error {
			data, err := json.Marshal(e)
			if err != nil {
				return err
			}
			var out aztables.EDMEntity
			return json.Unmarshal(data, &out)
		})
	})
	b.Run("jsonmap", func(b *testing.B) {
		v := benchValue
		m := map[string]any{
			"PartitionKey": v.PartitionKey, "RowKey": v.RowKey, "Name": v.Name, "Email": v.Email, "Age": v.Age,
			"Balance": v.Balance, "Balance@odata.type": "Edm.Double", "Visits": "1099511627776", "Visits@odata.type": "Edm.Int64",
			"Active": v.Active, "Joined": v.Joined, "Joined@odata.type": "Edm.DateTime", "Avatar": v.Avatar, "Avatar@odata.type": "Edm.Binary",
			"Score": v.Score, "Score@odata.type": "Edm.Double", "Notes": v.Notes,
		}
		codecLoop(b, func() error {
			data, err := json.Marshal(m)
			if err != nil {
				return err
			}
			var out map[string]any
			return json.Unmarshal(data, &out)
		})
	})
	b.Run("jsonstruct", func(b *testing.B) {
		v := benchValue
		s := benchStruct{PartitionKey: v.PartitionKey, RowKey: v.RowKey, Name: v.Name, Email: v.Email, Age: v.Age,
			Balance: v.Balance, BalanceType: "Edm.Double", Visits: v.Visits, VisitsType: "Edm.Int64", Active: v.Active,
			Joined: v.Joined, JoinedType: "Edm.DateTime", Avatar: v.Avatar, AvatarType: "Edm.Binary",
			Score: v.Score, ScoreType: "Edm.Double", Notes: v.Notes}
		codecLoop(b, func() error {
			data, err := json.Marshal(s)
			if err != nil {
				return err
			}
			var out benchStruct
			return json.Unmarshal(data, &out)
		})
	})
}
