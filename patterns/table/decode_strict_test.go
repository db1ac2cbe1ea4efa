package table

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestDecodeChecksScalarAnnotations(t *testing.T) {
	type target struct {
		PartitionKey, RowKey string
		N                    int64
		I                    int32
		F                    float64
		B                    bool
		T                    time.Time
		X                    map[string]any `table:",extra"`
	}
	c, err := codecFor(reflect.TypeOf(target{}))
	if err != nil {
		t.Fatal(err)
	}
	bad := map[string]string{
		"double into int32":        `{"I":5,"I@odata.type":"Edm.Double"}`,
		"double into int64":        `{"N":5,"N@odata.type":"Edm.Double"}`,
		"int64 number into int32":  `{"I":5,"I@odata.type":"Edm.Int64"}`,
		"int64 number into double": `{"F":5,"F@odata.type":"Edm.Int64"}`,
		"string-typed bool":        `{"B":true,"B@odata.type":"Edm.String"}`,
		"hex double":               `{"F":"0x1p4","F@odata.type":"Edm.Double"}`,
		"Inf double":               `{"F":"Inf","F@odata.type":"Edm.Double"}`,
		"number partition key":     `{"PartitionKey":5}`,
		"null row key":             `{"RowKey":null}`,
		"typed partition key":      `{"PartitionKey":"AAEC","PartitionKey@odata.type":"Edm.Binary"}`,
		"binary number in extra":   `{"Y":1234,"Y@odata.type":"Edm.Binary"}`,
		"string number in extra":   `{"Y":5,"Y@odata.type":"Edm.String"}`,
	}
	for name, js := range bad {
		var v target
		if err := c.decode([]byte(js), reflect.ValueOf(&v).Elem(), "", nil, false); err == nil || !strings.Contains(err.Error(), "property") {
			t.Errorf("%s: decode(%s) = %v, want a property error", name, js, err)
		}
	}
	good := map[string]string{
		"typed int32 into int32":  `{"I":5,"I@odata.type":"Edm.Int32"}`,
		"typed int32 into double": `{"F":5,"F@odata.type":"Edm.Int32"}`,
		"typed double number":     `{"F":5.5,"F@odata.type":"Edm.Double"}`,
		"double string":           `{"F":"1.5","F@odata.type":"Edm.Double"}`,
		"double Infinity":         `{"F":"-Infinity","F@odata.type":"Edm.Double"}`,
		"typed bool":              `{"B":true,"B@odata.type":"Edm.Boolean"}`,
		"escaped time":            `{"T":"2024-01-02T03:04:05\u002E5Z","T@odata.type":"Edm.DateTime"}`,
		"typed keys":              `{"PartitionKey":"p","PartitionKey@odata.type":"Edm.String","RowKey":"r"}`,
		"escaped int64 in extra":  `{"Y":"\u0035","Y@odata.type":"Edm.Int64"}`,
	}
	for name, js := range good {
		var v target
		if err := c.decode([]byte(js), reflect.ValueOf(&v).Elem(), "", nil, false); err != nil {
			t.Errorf("%s: decode(%s) = %v", name, js, err)
		}
	}
}
