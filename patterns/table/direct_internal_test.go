package table

import (
	"errors"
	"testing"
)

func TestSplitPage(t *testing.T) {
	good := map[string]int{
		`{"odata.metadata":"m","value":[{"a":1},{"b":"x}"}]}`: 2,
		` { "value" : [ ] } `:      0,
		`{"value":[{"s":"a\"}"}]}`: 1,
	}
	for in, n := range good {
		got, err := splitPage([]byte(in))
		if err != nil || len(got) != n {
			t.Errorf("splitPage(%s) = %d entities, %v; want %d", in, len(got), err, n)
		}
	}
	for _, in := range []string{
		`{"value":[{"a":1}{"b":2}]}`,      // missing comma
		`{"value":[{"a":1}]}x`,            // trailing data
		`{"value":[{"a":{"n":1}}]}`,       // nested
		`{"value":[{"a":1}] "x":1}`,       // missing comma between members
		`{"value":[{"a":1}`,               // truncated
		`[{"a":1}]`,                       // not an object
		`{"value":[{"a":"unterminated}]}`, // unterminated string
	} {
		if _, err := splitPage([]byte(in)); !errors.Is(err, errSyntax) {
			t.Errorf("splitPage(%s) = %v; want a syntax error", in, err)
		}
	}
}
