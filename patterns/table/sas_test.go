package table_test

import (
	"context"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

// devCred is the emulator account's shared key credential.
func devCred(t *testing.T) *aztables.SharedKeyCredential {
	t.Helper()
	cred, err := aztables.NewSharedKeyCredential(tabletest.DevAccount, tabletest.DevKey)
	if err != nil {
		t.Fatal(err)
	}
	return cred
}

// readAll reads every employee through a SAS URL.
func readAll(t *testing.T, sasURL string) ([]employee, error) {
	t.Helper()
	c, err := table.NewClientFromSASURL(sasURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	ro, err := table.New[employee](c)
	if err != nil {
		t.Fatal(err)
	}
	return table.Collect(ro.Query(context.Background(), nil))
}

// The key range may be given in aztables.SASPermissions (its own
// StartPartitionKey... fields) as well as in SASOptions: it reaches the URL
// and the signature either way, and a conflict is an error.
func TestSASURLRangeInPermissions(t *testing.T) {
	t.Parallel()
	env := tabletest.New(t)
	name := env.Name()
	tb, _ := table.New[employee](env.CreateTable(name, nil))
	load(t, tb, "Sales", 3)
	cred := devCred(t)
	svcURL := serviceURL(t, env.ConnectionString)
	expiry := time.Now().Add(time.Hour)

	for _, tc := range []struct {
		name string
		o    table.SASOptions
		want url.Values
	}{
		{"in Permissions", table.SASOptions{
			Permissions: aztables.SASPermissions{Read: true, StartPartitionKey: "Sales", EndPartitionKey: "Sales", EndRowKey: "000001"},
		}, url.Values{"spk": {"Sales"}, "epk": {"Sales"}, "erk": {"000001"}}},
		{"split between both", table.SASOptions{
			Permissions:       aztables.SASPermissions{Read: true, StartRowKey: "000001"},
			StartPartitionKey: "Sales", EndPartitionKey: "Sales",
		}, url.Values{"spk": {"Sales"}, "srk": {"000001"}, "epk": {"Sales"}}},
		{"same value in both", table.SASOptions{
			Permissions:       aztables.SASPermissions{Read: true, StartPartitionKey: "Sales"},
			StartPartitionKey: "Sales",
		}, url.Values{"spk": {"Sales"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			o.Expiry, o.AllowHTTP = expiry, true
			sas, err := table.SASURL(svcURL, cred, name, o)
			if err != nil {
				t.Fatal(err)
			}
			u, err := url.Parse(sas)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"spk", "srk", "epk", "erk"} {
				if got, want := u.Query().Get(k), tc.want.Get(k); got != want {
					t.Errorf("%s = %q, want %q (URL query %s)", k, got, want, u.RawQuery)
				}
			}
			// Azurite checks the signature, range included (it does not
			// enforce the range itself): a read succeeds only if the URL
			// carries what was signed.
			if got, err := readAll(t, sas); err != nil || len(got) != 3 {
				t.Fatalf("reading through the SAS: %d rows, %v", len(got), err)
			}
		})
	}

	// Different values in the two places: an error, not a silent choice.
	_, err := table.SASURL(svcURL, cred, name, table.SASOptions{
		Permissions:       aztables.SASPermissions{Read: true, StartPartitionKey: "Sales"},
		StartPartitionKey: "HR", Expiry: expiry, AllowHTTP: true,
	})
	var te *table.Error
	if !errors.As(err, &te) || te.Op != "sas" || te.StatusCode != 0 {
		t.Fatalf("conflicting StartPartitionKey: %v, want a *table.Error with Op sas", err)
	}
}
