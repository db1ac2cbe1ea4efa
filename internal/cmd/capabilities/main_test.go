package main

import (
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/testrig"
)

// TestMatrix: claims count only when their test passed; a failed test's
// claims show as failed, a skipped one's as skipped; columns come in the
// known services' order; build output and other lines are skipped.
func TestMatrix(t *testing.T) {
	if prefix != testrig.CapabilityPrefix {
		t.Fatalf("prefix %q, testrig logs %q", prefix, testrig.CapabilityPrefix)
	}
	in := strings.Join([]string{
		`# github.com/x/y`,
		`{"Action":"output","Package":"p/logtail","Test":"TestCosmosLatest/cosmos","Output":"    cosmos_test.go:88: capability: {\"service\":\"Cosmos DB (simulated)\",\"pattern\":\"logtail\",\"operation\":\"Latest\",\"how\":\"window\"}\n"}`,
		`{"Action":"output","Package":"p/logtail","Test":"TestCosmosLatest/storage","Output":"    cosmos_test.go:88: capability: {\"service\":\"Azurite\",\"pattern\":\"logtail\",\"operation\":\"Latest\",\"how\":\"$top\"}\n"}`,
		`{"Action":"output","Package":"p/table","Test":"TestCosmosCore/cosmos","Output":"    x.go:1: capability: {\"service\":\"Cosmos DB (simulated)\",\"pattern\":\"table\",\"operation\":\"filter on Timestamp\",\"refused\":true,\"how\":\"ErrUnsupported\"}\n"}`,
		`{"Action":"output","Package":"p/table","Test":"TestCosmosCore/storage","Output":"    x.go:1: capability: {\"service\":\"Azurite\",\"pattern\":\"table\",\"operation\":\"filter on Timestamp\",\"how\":\"a filter\"}\n"}`,
		`{"Action":"output","Package":"p/eventual","Test":"TestCosmosSweep/cosmos","Output":"    x.go:1: capability: {\"service\":\"Cosmos DB (simulated)\",\"pattern\":\"eventual\",\"operation\":\"Sweep\",\"how\":\"scan\"}\n"}`,
		`{"Action":"pass","Package":"p/logtail","Test":"TestCosmosLatest/cosmos"}`,
		`{"Action":"fail","Package":"p/logtail","Test":"TestCosmosLatest/storage"}`,
		`{"Action":"pass","Package":"p/table","Test":"TestCosmosCore/cosmos"}`,
		`{"Action":"pass","Package":"p/table","Test":"TestCosmosCore/storage"}`,
		`{"Action":"skip","Package":"p/eventual","Test":"TestCosmosSweep/cosmos"}`,
	}, "\n")
	m := matrix{claims: map[test][]claim{}, results: map[test]string{}}
	if err := m.read(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if !m.write(&out) {
		t.Fatal("a failed test was not reported")
	}
	want := `| pattern | operation | Azurite | Cosmos DB (simulated) |
|---|---|---|---|
| eventual | Sweep | not run | skipped |
| logtail | Latest | **FAILED** (TestCosmosLatest/storage) | supported: window |
| table | filter on Timestamp | supported: a filter | refused: ErrUnsupported |

1 tests failed:
  p/logtail TestCosmosLatest/storage
`
	if out.String() != want {
		t.Fatalf("matrix:\n%s\nwant:\n%s", out.String(), want)
	}
}
