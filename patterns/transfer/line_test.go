package transfer

import (
	"bytes"
	"errors"
	"fmt"
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
		// the JSON syntax, which decodeLine scans itself
		`{"PartitionKey":"p","RowKey":"r","Properties":[],}`,
		`{"PartitionKey":"p" "RowKey":"r","Properties":[]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[]`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.String","x"],]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.String","x"]["B","Edm.String","x"]]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.String","x"]]}` + "\x00",
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.String","x"]]}1`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.String","x"]]`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.String","x]]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.String","a\'"]]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.String","a\u12"]]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.String","a` + "\t" + `"]]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.\u0044ecimal","1"]]}`,
		`{"Partition\u004bey":"p","PartitionKey":"p","RowKey":"r","Properties":[]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.Int32",01]]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.Int32",-]]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.Double",1.]]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.Double",.5]]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.Double",1e]]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.Double",1e309]]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.Double","nan"]]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.Boolean",tru]]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.Boolean",truex]]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.String",null]]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.Int64","-0"]]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.Int64","+1"]]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.Guid","4185404a-0f1e-4c2d-8b3a-00000000000-"]]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.Guid","4185404a-0f1e-4c2d-8b3a0-00000000000"]]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.DateTime","2023-02-29T00:00:00.0000000Z"]]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.DateTime","2024-01-01T24:00:00.0000000Z"]]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.DateTime","2024-01-01T00:00:60.0000000Z"]]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.DateTime","2024-01-01T00:00:00.0000000+"]]}`,
		`{"PartitionKey":"p","RowKey":"r","Properties":[["A","Edm.String","x"],["A","Edm.Int32",1]]}`,
	} {
		_, err := decodeLine([]byte(line))
		if !errors.Is(err, errLine) {
			t.Errorf("%.80s: %v, want a malformed line", line, err)
		} else if len(err.Error()) > 300 {
			t.Errorf("%.80s: error of %d bytes", line, len(err.Error()))
		}
	}
}

// TestDecodeLineAccepts: the JSON decodeLine reads as encoding/json does
// (whitespace, member order, escapes, lone surrogates, number forms).
func TestDecodeLineAccepts(t *testing.T) {
	for _, c := range []struct {
		line string
		want table.Dynamic
	}{
		{" \t\r\n{ \"RowKey\" : \"r\" , \"Properties\" : [ [ \"A\" , \"Edm.Boolean\" , true ] ] , \"PartitionKey\" : \"p\" } \r\n\t",
			table.Dynamic{PartitionKey: "p", RowKey: "r", Properties: map[string]any{"A": true}}},
		{`{"Partition\u004bey":"\ud83d\ude00\ud800x\udc00","RowKey":"\"\\\/\b\f\n\r\t\u00e9","Properties":[["\u0041","Edm.\u0053tring","\ud800\ud800\udc00"]]}`,
			table.Dynamic{PartitionKey: "\U0001F600\uFFFDx\uFFFD", RowKey: "\"\\/\b\f\n\r\té", Properties: map[string]any{"A": "\uFFFD\U00010000"}}},
		{`{"PartitionKey":"","RowKey":"","Properties":[["","Edm.Int32",-0],["B","Edm.Double",-0.0e-0],["C","Edm.Double",1E-400],["D","Edm.Binary",""],["E","Edm.Guid","0000000A-000b-0000-0000-0000000000fF"]]}`,
			table.Dynamic{Properties: map[string]any{"": int32(0), "B": math.Copysign(0, -1), "C": 0.0, "D": []byte{}, "E": table.GUID{9: 0, 3: 0xa, 5: 0xb, 15: 0xff}}}},
		{`{"PartitionKey":"p","RowKey":"r","Timestamp":"2024-02-29T23:59:59.9999999Z","Properties":[["T","Edm.DateTime","0000-01-01T00:00:00.0000001Z"]]}`,
			table.Dynamic{PartitionKey: "p", RowKey: "r", Meta: table.Meta{Timestamp: time.Date(2024, 2, 29, 23, 59, 59, 999999900, time.UTC)},
				Properties: map[string]any{"T": time.Date(0, 1, 1, 0, 0, 0, 100, time.UTC)}}},
	} {
		got, err := decodeLine([]byte(c.line))
		if err != nil || !sameEntity(got, c.want) {
			t.Errorf("%s:\n got %#v, %v\nwant %#v", c.line, got, err, c.want)
		}
	}
}

// TestLineRoundTripLarge: an entity whose strings and properties pass the
// decoder's first buffers (1 KiB of strings, 16 properties), with escapes
// in every string.
func TestLineRoundTripLarge(t *testing.T) {
	d := table.Dynamic{PartitionKey: strings.Repeat("p\"", 300), RowKey: "r\u2028", Properties: map[string]any{}}
	for i := range 200 {
		switch i % 4 {
		case 0:
			d.Properties[fmt.Sprintf("S\n%d", i)] = strings.Repeat("\x01é", i)
		case 1:
			d.Properties[fmt.Sprintf("L%d", i)] = int64(-i) << 40
		case 2:
			d.Properties[fmt.Sprintf("B%d", i)] = bytes.Repeat([]byte{byte(i)}, i)
		case 3:
			d.Properties[fmt.Sprintf("D\\%d", i)] = time.Date(2000+i, 1, 2, 3, 4, 5, 6*i*100, time.UTC)
		}
	}
	line, err := appendLine(nil, &d, true)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeLine(line[:len(line)-1])
	if err != nil || !sameEntity(got, d) {
		t.Fatalf("round trip: %v", err)
	}
}
