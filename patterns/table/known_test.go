package table_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/patterns/table"
)

// A client tablekit did not build (aztables' own constructors) is never
// taken for Table Storage: its Table follows Portable, the strictest
// profile, and has no name, which slog.Default's log says once; Describe
// gives both. On the Cosmos DB simulation, whose results come in no key
// order, an ordered fan-out and a Limit through such a client stay
// correct. (Not parallel: it swaps slog's default logger.)
func TestUnknownClients(t *testing.T) {
	var logged bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logged, nil)))
	defer slog.SetDefault(old)
	table.ForgetUnknownWarning()

	for _, r := range []*testrig.Rig{testrig.New(t), testrig.NewCosmos(t)} {
		ctx := context.Background()
		known := testrig.NewTable[employee](t, r.Table())
		if want := r.Profile(); known.Profile() != want || known.Name() == "" {
			t.Fatalf("%s: a client tablekit built: profile %s, name %q; want %s and its name", r.ServiceName(), known.Profile().Name, known.Name(), want.Name)
		}
		var ops []table.Op
		for i := range 30 {
			ops = append(ops, known.InsertOp(employee{Department: fmt.Sprint("d", i%3), ID: fmt.Sprintf("%03d", i), FirstName: "F"}))
		}
		if _, err := known.Submit(ctx, ops, nil); err != nil {
			t.Fatal(err)
		}

		unknown := testrig.NewTable[employee](t, r.SDKClient(known.Name()))
		if unknown.Profile() != table.Portable || unknown.Name() != "" || table.Direct(unknown) {
			t.Fatalf("%s: a client aztables built: profile %s, name %q, direct path %v; want Portable, no name, the SDK's path", r.ServiceName(), unknown.Profile().Name, unknown.Name(), table.Direct(unknown))
		}
		qs := []*table.Query{{Filter: table.PartitionKey("d2"), Limit: 3, PageSize: 2}, {Filter: table.PartitionKey("d0"), Limit: 3, PageSize: 2}}
		fan, err := table.Collect(unknown.FanOut(ctx, qs, &table.FanOutOptions{Ordered: true}))
		var ks []string
		for _, e := range fan {
			ks = append(ks, e.Department+"/"+e.ID)
		}
		if err != nil || !slices.Equal(ks, []string{"d0/000", "d0/003", "d0/006", "d2/002", "d2/005", "d2/008"}) {
			t.Fatalf("%s: ordered FanOut through an unknown client = %v, %v", r.ServiceName(), ks, err)
		}

		described := testrig.NewTable[employee](t, table.Describe(r.SDKClient(known.Name()), known.Name(), r.Profile()))
		if described.Profile() != r.Profile() || described.Name() != known.Name() || table.Direct(described) {
			t.Fatalf("%s: a described client: profile %s, name %q, direct %v", r.ServiceName(), described.Profile().Name, described.Name(), table.Direct(described))
		}
		if e, err := described.Get(ctx, "d1", "004", nil); err != nil || e.Value.FirstName != "F" {
			t.Fatalf("%s: Get through a described client: %+v, %v", r.ServiceName(), e, err)
		}
		if p := testrig.NewTable[employee](t, table.Describe(r.SDKClient("x"), "x", nil)).Profile(); p != table.Portable {
			t.Fatalf("Describe with a nil profile: %s, want Portable", p.Name)
		}
	}
	if n := strings.Count(logged.String(), "table.Portable"); n != 1 {
		t.Fatalf("the unknown-client warning was logged %d times, want once:\n%s", n, logged.String())
	}
}

// Azurite checks Shared Key signatures: a connection string with another
// key is refused (403) on the direct path tablekit signs itself, so every
// test of that path also tests the signer.
func TestWrongKeyRefused(t *testing.T) {
	t.Parallel()
	testrig.StorageOnly(t, "the simulation forwards to Azurite with its own key")
	r := testrig.New(t)
	c := r.Table()
	name := testrig.NewTable[employee](t, c).Name()
	cs := r.ConnectionString
	i := strings.Index(cs, "AccountKey=")
	j := strings.IndexByte(cs[i:], ';')
	wrong := cs[:i] + "AccountKey=" + "d3Jvbmcga2V5IHdyb25nIGtleSB3cm9uZyBrZXkgd3Jvbmc="
	if j > 0 {
		wrong += cs[i+j:]
	}
	svc, err := table.NewServiceClientFromConnectionString(wrong, nil)
	if err != nil {
		t.Fatal(err)
	}
	tb := testrig.NewTable[employee](t, table.NewClient(svc, name))
	if !table.Direct(tb) {
		t.Fatal("not the direct path")
	}
	_, err = tb.Get(context.Background(), "d", "1", nil)
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.StatusCode != http.StatusForbidden {
		t.Fatalf("Get with another key: %v; want 403", err)
	}
	// The right key: found nothing, as it should.
	if _, err := testrig.NewTable[employee](t, c).Get(context.Background(), "d", "1", nil); !errors.Is(err, table.ErrNotFound) {
		t.Fatalf("Get with the key: %v; want ErrNotFound", err)
	}
}
