package table

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// A stored value decodes only into a field of a fitting type: the
// annotation of a JSON string is its type.
func TestDecodeChecksStoredTypes(t *testing.T) {
	type target struct {
		PartitionKey, RowKey string
		S                    string
		N                    int64
		I                    int32
		F                    float64
		T                    time.Time
		B                    []byte
	}
	c, err := codecFor(reflect.TypeOf(target{}))
	if err != nil {
		t.Fatal(err)
	}
	bad := map[string]string{
		"binary into string":  `{"S":"AAEC","S@odata.type":"Edm.Binary"}`,
		"string into int64":   `{"N":"42"}`,
		"int64 into int32":    `{"I":"42","I@odata.type":"Edm.Int64"}`,
		"string into time":    `{"T":"2024-01-02T03:04:05Z"}`,
		"string into binary":  `{"B":"AAEC"}`,
		"guid into string":    `{"S":"4185404a-5818-48c3-b9be-f217df0dba6f","S@odata.type":"Edm.Guid"}`,
		"number into string":  `{"S":5}`,
		"bool into int32":     `{"I":true}`,
		"int64 into double":   `{"F":"5","F@odata.type":"Edm.Int64"}`,
		"int32 overflow":      `{"I":2147483648}`,
		"fraction into int32": `{"I":1.5}`,
		"double into int32":   `{"I":2,"I@odata.type":"Edm.Double"}`,
		"double into int64":   `{"N":2,"N@odata.type":"Edm.Double"}`,
		"Inf as double":       `{"F":"Inf","F@odata.type":"Edm.Double"}`,
		"hex float as double": `{"F":"0x1p4","F@odata.type":"Edm.Double"}`,
		"number PartitionKey": `{"PartitionKey":5}`,
		"bool RowKey":         `{"RowKey":true}`,
	}
	for name, js := range bad {
		var v target
		err := c.decode([]byte(js), reflect.ValueOf(&v).Elem(), "", nil, false)
		if err == nil || !strings.Contains(err.Error(), "property") {
			t.Errorf("%s: decode(%s) = %v, want a property error", name, js, err)
		}
	}
	good := map[string]string{
		"string":            `{"S":"x","S@odata.type":"Edm.String"}`,
		"int32 into int64":  `{"N":42}`,
		"int32 into double": `{"F":2}`,
		"typed int64":       `{"N":"42","N@odata.type":"Edm.Int64"}`,
		"typed double NaN":  `{"F":"NaN","F@odata.type":"Edm.Double"}`,
		"typed double 2":    `{"F":2,"F@odata.type":"Edm.Double"}`,
		"string double":     `{"F":"2.5e3","F@odata.type":"Edm.Double"}`,
		"typed time":        `{"T":"2024-01-02T03:04:05Z","T@odata.type":"Edm.DateTime"}`,
		"null":              `{"S":null,"T":null}`,
	}
	for name, js := range good {
		var v target
		if err := c.decode([]byte(js), reflect.ValueOf(&v).Elem(), "", nil, false); err != nil {
			t.Errorf("%s: decode(%s) = %v", name, js, err)
		}
	}
}
