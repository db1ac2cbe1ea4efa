package transfer

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/patterns/table"
)

func TestLineRoundTrip(t *testing.T) {
	d := table.Dynamic{PartitionKey: "p\"\\\u2028", RowKey: "", Properties: map[string]any{
		"S": "x<y>&\u0000", "B": false, "I": int32(math.MinInt32), "L": int64(math.MaxInt64),
		"D": -0.5, "N": math.Inf(-1), "T": time.Date(9999, 12, 31, 23, 59, 59, 999999900, time.UTC),
		"Bin": []byte{}, "G": table.GUID{0xff, 1},
	}}
	d.Timestamp = time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	line, err := appendLine(nil, &d, true)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeLine(line[:len(line)-1])
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	if !reflect.DeepEqual(got.Properties, d.Properties) || got.PartitionKey != d.PartitionKey || got.RowKey != d.RowKey || !got.Timestamp.Equal(d.Timestamp) {
		t.Fatalf("round trip:\n got %#v\nwant %#v", got, d)
	}
	nan, _ := appendLine(nil, &table.Dynamic{PartitionKey: "p", Properties: map[string]any{"X": math.NaN()}}, false)
	if d, err := decodeLine(nan[:len(nan)-1]); err != nil || !math.IsNaN(d.Properties["X"].(float64)) {
		t.Fatalf("NaN: %v %v", d, err)
	}
}

// TestDecodeLineStrict: every malformed line is refused, naming no more
// than 40 bytes of what it quotes.
func TestDecodeLineStrict(t *testing.T) {
	for _, line := range []string{
		``, `{}`, `[]`, `{"PartitionKey":"p","RowKey":"r"}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[]} {}`,
		`{"PartitionKey":"p","PartitionKey":"q","RowKey":"r","Properties":[]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[],"Extra":1}`,
		`{"PartitionKey":1,"RowKey":"r","Properties":[]}`,
		`{"PartitionKey":"p","RowKey":"r","Timestamp":"2026-01-02T03:04:05Z","Properties":[]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.Int32",1],["A","Edm.Int32",2]]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.Int32",2147483648]]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.Int32",1.5]]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.Int32","1"]]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.Int64",1]]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.Int64","01"]]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.Int64","9223372036854775808"]]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.Double","1"]]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.Binary","AAE"]]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.Guid","not-a-guid"]]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.Boolean","true"]]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.Decimal","1"]]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.String","x",1]]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.String"]]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["RowKey","Edm.String","x"]]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["TkWrites","Edm.String","x"]]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A@odata.type","Edm.String","x"]]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.DateTime","2026-01-02"]]}`,
		"{\"PartitionKey\":\"\xff\",\"RowKey\":\"r\",\"Properties\":[]}",
		`{"PartitionKey":"p","RowKey":"r","Properties":[["` + strings.Repeat("x", 1000) + `","Edm.Decimal",1]]}`,
	} {
		_, err := decodeLine([]byte(line))
		if !errors.Is(err, errLine) {
			t.Errorf("%.80s: %v, want a malformed line", line, err)
		} else if len(err.Error()) > 300 {
			t.Errorf("%.80s: error of %d bytes", line, len(err.Error()))
		}
	}
}
