package table_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/emulator"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

// devCred is the emulator account's shared key credential.
func devCred(t *testing.T) *aztables.SharedKeyCredential {
	t.Helper()
	cred, err := aztables.NewSharedKeyCredential(emulator.DevAccount, emulator.DevKey)
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
	ro, err := table.New[employee](c, nil)
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
	tb, _ := table.New[employee](env.CreateTable(name, nil), nil)
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

// checkSASError fails t unless err is a *table.Error with Op "sas" for
// table name that satisfies errors.Is(err, table.ErrInvalid) and shows
// neither a signature nor the account key.
func checkSASError(t *testing.T, err error, name string) {
	t.Helper()
	var te *table.Error
	if !errors.As(err, &te) || te.Op != "sas" || te.Table != name || te.StatusCode != 0 {
		t.Fatalf("error %v: want a *table.Error with Op sas for table %s", err, name)
	}
	if !errors.Is(err, table.ErrInvalid) {
		t.Errorf("error %v: errors.Is(err, ErrInvalidSAS) is false", err)
	}
	if msg := err.Error(); strings.Contains(msg, "sig=") || strings.Contains(msg, emulator.DevKey) || strings.Contains(msg, "SECRET") {
		t.Errorf("error shows a secret: %s", msg)
	}
}

// Bad options and bad service URLs fail before signing, each with an error
// that says what was wrong.
func TestSASURLValidation(t *testing.T) {
	t.Parallel()
	cred := devCred(t)
	const svc, name = "https://acct.table.core.windows.net", "employees"
	r := aztables.SASPermissions{Read: true}
	now := time.Now()
	hour := now.Add(time.Hour)
	// A time in the future, but within the current second: signed to the
	// second, it is already past.
	thisSecond := now.Truncate(time.Second).Add(999 * time.Millisecond)
	// Two different times that are the same second once signed.
	t0 := hour.Truncate(time.Second)

	for _, tc := range []struct {
		what string
		url  string
		name string
		o    table.SASOptions
		want string // in the message
	}{
		{what: "no permissions", o: table.SASOptions{Expiry: hour}, want: "no permissions"},
		{what: "only a range in Permissions", o: table.SASOptions{Permissions: aztables.SASPermissions{StartPartitionKey: "a"}, Expiry: hour}, want: "no permissions"},
		{what: "no expiry", o: table.SASOptions{Permissions: r}, want: "no expiry"},
		{what: "expiry in the past", o: table.SASOptions{Permissions: r, Expiry: now.Add(-time.Minute)}, want: "not in the future"},
		{what: "expiry within this second", o: table.SASOptions{Permissions: r, Expiry: thisSecond}, want: "not in the future"},
		{what: "expiry before start", o: table.SASOptions{Permissions: r, Start: hour.Add(time.Hour), Expiry: hour}, want: "not after start"},
		{what: "expiry and start in one second", o: table.SASOptions{Permissions: r, Start: t0.Add(100 * time.Millisecond), Expiry: t0.Add(900 * time.Millisecond)}, want: "not after start"},
		{what: "inverted PartitionKeys", o: table.SASOptions{Permissions: r, Expiry: hour, StartPartitionKey: "b", EndPartitionKey: "a"}, want: "inverted"},
		{what: "inverted RowKeys in one partition", o: table.SASOptions{Permissions: r, Expiry: hour, StartPartitionKey: "p", StartRowKey: "2", EndPartitionKey: "p", EndRowKey: "1"}, want: "inverted"},
		{what: "inverted, split between Permissions and options", o: table.SASOptions{Permissions: aztables.SASPermissions{Read: true, EndPartitionKey: "a"}, Expiry: hour, StartPartitionKey: "b"}, want: "inverted"},
		{what: "RowKey bound alone", o: table.SASOptions{Permissions: r, Expiry: hour, StartRowKey: "r"}, want: "RowKey bound"},
		{what: "bad key", o: table.SASOptions{Permissions: r, Expiry: hour, StartPartitionKey: "a/b"}, want: "not allowed"},
		{what: "bad table name", name: "no", o: table.SASOptions{Permissions: r, Expiry: hour}, want: "table name"},
		{what: "not http", url: "ftp://acct.table.core.windows.net", want: "https"},
		{what: "no host", url: "https:///devstoreaccount1", want: "no host"},
		{what: "not a URL", url: "https://acct.table.core.windows.net/%zz?sig=SECRET", want: "does not parse"},
		{what: "relative", url: "acct.table.core.windows.net", want: "https"},
		{what: "user information", url: "https://me:SECRET@acct.table.core.windows.net", want: "user information"},
		{what: "fragment", url: "https://acct.table.core.windows.net/#SECRET", want: "fragment"},
		{what: "http without AllowHTTP", url: "http://127.0.0.1:10002/devstoreaccount1", want: "AllowHTTP"},
		{what: "already a SAS", url: svc + "/?sv=2019-02-02&sig=SECRET", want: "SAS parameter"},
		{what: "already a SAS, upper case", url: svc + "/?foo=bar&SIG=SECRET", want: "SAS parameter"},
		{what: "bad query", url: svc + "/?a=%zz&sig=SECRET", want: "query does not parse"},
	} {
		t.Run(tc.what, func(t *testing.T) {
			u, n, o := tc.url, tc.name, tc.o
			if u == "" {
				u = svc
			}
			if n == "" {
				n = name
			}
			if o == (table.SASOptions{}) {
				o = table.SASOptions{Permissions: r, Expiry: hour}
			}
			got, err := table.SASURL(u, cred, n, o)
			if err == nil {
				t.Fatalf("SASURL succeeded: %s", got)
			}
			checkSASError(t, err, n)
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
	// Errors keep the sentinels of what they found.
	_, err := table.SASURL(svc, cred, "no", table.SASOptions{Permissions: r, Expiry: hour})
	if !errors.Is(err, table.ErrInvalidEntity) {
		t.Errorf("bad table name: %v, want ErrInvalidEntity too", err)
	}
	_, err = table.SASURL(svc, cred, name, table.SASOptions{Permissions: r, Expiry: hour, StartPartitionKey: "a/b"})
	if !errors.Is(err, table.ErrInvalidKey) {
		t.Errorf("bad key: %v, want ErrInvalidKey too", err)
	}
	_, err = table.SASURL(svc, nil, name, table.SASOptions{Permissions: r, Expiry: hour})
	checkSASError(t, err, name)

	// Ranges that are valid in the service's order (UTF-16 code units),
	// though not in Go's byte order, and ranges open at one end.
	for _, o := range []table.SASOptions{
		{StartPartitionKey: "\U0001F600", EndPartitionKey: "\uFF61"}, // a surrogate pair sorts before U+FF61
		{StartPartitionKey: "p", StartRowKey: "1", EndPartitionKey: "p", EndRowKey: "1"},
		{StartPartitionKey: "p", StartRowKey: "2", EndPartitionKey: "q", EndRowKey: "1"},
		{StartPartitionKey: "p", StartRowKey: "2", EndPartitionKey: "p"},
		{StartPartitionKey: "b"},
		{EndPartitionKey: "a", EndRowKey: "1"},
	} {
		o.Permissions, o.Expiry = r, hour
		if _, err := table.SASURL(svc, cred, name, o); err != nil {
			t.Errorf("SASURL(%+v): %v", o, err)
		}
	}
}

// The table goes into the path of the service URL, whatever its shape, and
// a query string the URL already has is kept.
func TestSASURLServiceURLShapes(t *testing.T) {
	t.Parallel()
	cred := devCred(t)
	o := table.SASOptions{Permissions: aztables.SASPermissions{Read: true}, Expiry: time.Now().Add(time.Hour), AllowHTTP: true}
	for _, tc := range []struct {
		url, wantPath string
		wantQuery     url.Values // besides the SAS
	}{
		{"https://acct.table.core.windows.net", "/employees", nil},
		{"https://acct.table.core.windows.net/", "/employees", nil},
		{"https://acct.table.core.windows.net/?foo=bar", "/employees", url.Values{"foo": {"bar"}}},
		{"https://acct.table.core.windows.net?foo=bar&x=1&x=2", "/employees", url.Values{"foo": {"bar"}, "x": {"1", "2"}}},
		{"https://acct.table.core.windows.net/?", "/employees", nil},
		{"http://127.0.0.1:10002/devstoreaccount1", "/devstoreaccount1/employees", nil},
		{"http://127.0.0.1:10002/devstoreaccount1/", "/devstoreaccount1/employees", nil},
		{"http://127.0.0.1:10002/devstoreaccount1?timeout=30", "/devstoreaccount1/employees", url.Values{"timeout": {"30"}}},
	} {
		got, err := table.SASURL(tc.url, cred, "employees", o)
		if err != nil {
			t.Errorf("SASURL(%s): %v", tc.url, err)
			continue
		}
		u, err := url.Parse(got)
		if err != nil {
			t.Errorf("SASURL(%s) = %s: %v", tc.url, got, err)
			continue
		}
		q := u.Query()
		if u.Path != tc.wantPath || q.Get("sig") == "" || q.Get("tn") != "employees" || q.Get("sp") != "r" {
			t.Errorf("SASURL(%s): path %q (want %q), SAS parameters %v", tc.url, u.Path, tc.wantPath, q)
		}
		for k, want := range tc.wantQuery {
			if !slices.Equal(q[k], want) {
				t.Errorf("SASURL(%s): %s = %q, want %q kept", tc.url, k, q[k], want)
			}
		}
	}

	// Against the emulator: its endpoint has a path, and an extra query
	// parameter rides along with the SAS.
	env := tabletest.New(t)
	name := env.Name()
	tb, _ := table.New[employee](env.CreateTable(name, nil), nil)
	load(t, tb, "Sales", 2)
	sas, err := table.SASURL(serviceURL(t, env.ConnectionString)+"/?foo=bar", cred, name, o)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := readAll(t, sas); err != nil || len(got) != 2 {
		t.Fatalf("reading through %s: %d rows, %v", sas, len(got), err)
	}
}

// waitFor calls cond until it returns nil, for up to 45 s: the service
// applies a stored access policy change within 30 s. Azurite applies it at
// once, so there cond succeeds on the first call and nothing waits.
func waitFor(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		<-tick.C
	}
}

// status is the HTTP status of a service error, 0 for none.
func status(err error) int {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode
	}
	return 0
}

// A SAS bound to a stored access policy (si) takes its permissions and
// expiry from the policy, and stops working when the policy is removed.
func TestStoredAccessPolicy(t *testing.T) {
	t.Parallel()
	env := tabletest.New(t)
	name := env.Name()
	c := env.CreateTable(name, nil)
	tb, _ := table.New[employee](c, nil)
	load(t, tb, "Sales", 3)
	ctx := context.Background()
	cred := devCred(t)
	svcURL := serviceURL(t, env.ConnectionString)
	now := time.Now()
	// Azurite needs all three fields in every policy (the service does not).
	readers := table.AccessPolicy{ID: "readers", Permissions: aztables.SASPermissions{Read: true}, Start: now.Add(-time.Minute), Expiry: now.Add(time.Hour)}
	writers := table.AccessPolicy{ID: "writers", Permissions: aztables.SASPermissions{Add: true, Update: true}, Start: now.Add(-time.Minute), Expiry: now.Add(time.Hour)}
	if err := table.SetAccessPolicy(ctx, c, readers, writers); err != nil {
		t.Fatal(err)
	}
	got, err := table.GetAccessPolicy(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	want := []table.AccessPolicy{readers, writers}
	for i := range want {
		want[i].Start = want[i].Start.UTC().Truncate(time.Second)
		want[i].Expiry = want[i].Expiry.UTC().Truncate(time.Second)
	}
	if !slices.EqualFunc(got, want, func(a, b table.AccessPolicy) bool {
		return a.ID == b.ID && a.Permissions == b.Permissions && a.Start.Equal(b.Start) && a.Expiry.Equal(b.Expiry)
	}) {
		t.Fatalf("GetAccessPolicy = %+v, want %+v", got, want)
	}

	// The SAS names the policy and carries no permissions or expiry.
	sas, err := table.SASURL(svcURL, cred, name, table.SASOptions{Identifier: "readers", AllowHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(sas)
	if q := u.Query(); q.Get("si") != "readers" || q.Has("sp") || q.Has("se") {
		t.Fatalf("SAS query %v: want si=readers and no sp or se", q)
	}
	waitFor(t, "reading through a SAS bound to a policy", func() error {
		rows, err := readAll(t, sas)
		if err == nil && len(rows) != 3 {
			err = fmt.Errorf("%d rows, want 3", len(rows))
		}
		return err
	})
	ro, _ := table.New[employee](mustSASClient(t, sas), nil)
	if _, err := ro.Insert(ctx, emp("Sales", 99)); status(err) != 403 {
		t.Fatalf("insert through a SAS bound to a read-only policy = %v, want 403", err)
	}

	// Revocation: keep only the writers' policy.
	if err := table.SetAccessPolicy(ctx, c, writers); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "reading through a SAS whose policy was removed", func() error {
		if _, err := readAll(t, sas); status(err) != 403 {
			return fmt.Errorf("got %v, want 403", err)
		}
		return nil
	})
	// Removing them all.
	if err := table.SetAccessPolicy(ctx, c); err != nil {
		t.Fatal(err)
	}
	if got, err := table.GetAccessPolicy(ctx, c); err != nil || len(got) != 0 {
		t.Fatalf("after removing every policy: %+v, %v", got, err)
	}
}

func mustSASClient(t *testing.T, sasURL string) *aztables.Client {
	t.Helper()
	c, err := table.NewClientFromSASURL(sasURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Policies the service would reject fail before the network; a SAS bound to
// a policy may leave permissions and expiry out, but what it sets is still
// checked.
func TestStoredAccessPolicyValidation(t *testing.T) {
	t.Parallel()
	env := tabletest.New(t)
	ft := &faults.Transport{}
	opts := table.ClientOptions()
	opts.Transport = ft
	c := env.Table(opts)
	ft.Reset()
	ctx := context.Background()
	now := time.Now()
	p := func(id string) table.AccessPolicy {
		return table.AccessPolicy{ID: id, Permissions: aztables.SASPermissions{Read: true}, Start: now, Expiry: now.Add(time.Hour)}
	}
	ranged := p("ranged")
	ranged.Permissions.StartPartitionKey = "a"
	inverted := p("inverted")
	inverted.Start = now.Add(2 * time.Hour)
	for _, tc := range []struct {
		what     string
		policies []table.AccessPolicy
	}{
		{"six policies", []table.AccessPolicy{p("a"), p("b"), p("c"), p("d"), p("e"), p("f")}},
		{"empty ID", []table.AccessPolicy{p("")}},
		{"65-character ID", []table.AccessPolicy{p(strings.Repeat("x", 65))}},
		{"repeated ID", []table.AccessPolicy{p("a"), p("a")}},
		{"key range", []table.AccessPolicy{ranged}},
		{"expiry before start", []table.AccessPolicy{inverted}},
	} {
		err := table.SetAccessPolicy(ctx, c, tc.policies...)
		var te *table.Error
		if !errors.As(err, &te) || te.Op != "set access policy" || !errors.Is(err, table.ErrInvalid) {
			t.Errorf("%s: %v, want a *table.Error satisfying ErrInvalidSAS", tc.what, err)
		}
	}
	if n := ft.Count(); n != 0 {
		t.Errorf("%d requests sent for invalid policies", n)
	}
	// The limits themselves are fine: 5 policies, a 64-character ID; so
	// is a policy that has already expired (it disables its SAS).
	five := []table.AccessPolicy{p("a"), p("b"), p("c"), p("d"), p(strings.Repeat("é", 64))}
	if err := table.SetAccessPolicy(ctx, c, five...); err != nil {
		t.Fatalf("5 policies, 64-character ID: %v", err)
	}
	expired := table.AccessPolicy{ID: "old", Permissions: aztables.SASPermissions{Read: true}, Start: now.Add(-2 * time.Hour), Expiry: now.Add(-time.Hour)}
	if err := table.SetAccessPolicy(ctx, c, expired); err != nil {
		t.Fatalf("an expired policy: %v", err)
	}
	if err := table.SetAccessPolicy(ctx, nil, p("a")); err == nil {
		t.Error("SetAccessPolicy with a nil client succeeded")
	}
	if _, err := table.GetAccessPolicy(ctx, nil); err == nil {
		t.Error("GetAccessPolicy with a nil client succeeded")
	}

	cred := devCred(t)
	const svc, name = "https://acct.table.core.windows.net", "employees"
	for _, o := range []table.SASOptions{
		{Identifier: "readers"},
		{Identifier: "readers", Expiry: now.Add(time.Hour)},
		{Identifier: "readers", Permissions: aztables.SASPermissions{Read: true}},
		{Identifier: "readers", StartPartitionKey: "a", EndPartitionKey: "b"},
		{Identifier: strings.Repeat("x", 64)},
	} {
		if _, err := table.SASURL(svc, cred, name, o); err != nil {
			t.Errorf("SASURL(%+v): %v", o, err)
		}
	}
	for _, o := range []table.SASOptions{
		{Identifier: strings.Repeat("x", 65)},
		{Identifier: "readers", Expiry: now.Add(-time.Minute)},
		{Identifier: "readers", Start: now.Add(2 * time.Hour), Expiry: now.Add(time.Hour)},
		{Identifier: "readers", StartPartitionKey: "b", EndPartitionKey: "a"},
		{Identifier: "bad\xff"},
	} {
		_, err := table.SASURL(svc, cred, name, o)
		if err == nil {
			t.Errorf("SASURL(%+v) succeeded", o)
			continue
		}
		checkSASError(t, err, name)
	}
}

// The connection string of the test account gives a service URL and key
// that work for shared key requests and for minting a SAS.
func TestParseConnectionString(t *testing.T) {
	t.Parallel()
	env := tabletest.New(t)
	ctx := context.Background()
	svcURL, cred, err := table.ParseConnectionString(env.ConnectionString)
	if err != nil {
		t.Fatal(err)
	}
	if ep, ok := tableEndpoint(env.ConnectionString); ok && svcURL != strings.TrimRight(ep, "/") {
		t.Errorf("service URL %s, want the TableEndpoint %s", svcURL, ep)
	}
	svc, err := aztables.NewServiceClientWithSharedKey(svcURL, cred, table.ClientOptions())
	if err != nil {
		t.Fatal(err)
	}
	name := env.Name()
	if err := table.CreateTable(ctx, svc, name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = table.DeleteTable(context.Background(), svc, name) })
	tb, _ := table.New[employee](table.NewClient(svc, name), nil)
	load(t, tb, "Sales", 2)
	sas, err := table.SASURL(svcURL, cred, name, table.SASOptions{
		Permissions: aztables.SASPermissions{Read: true}, Expiry: time.Now().Add(time.Hour),
		AllowHTTP: strings.HasPrefix(svcURL, "http:"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := readAll(t, sas); err != nil || len(got) != 2 {
		t.Fatalf("reading through the SAS: %d rows, %v", len(got), err)
	}
}

// tableEndpoint is the TableEndpoint of a connection string, if it has one.
func tableEndpoint(cs string) (string, bool) {
	for _, part := range strings.Split(cs, ";") {
		if v, ok := strings.CutPrefix(part, "TableEndpoint="); ok {
			return v, true
		}
	}
	return "", false
}

// The forms of connection string Azure documents, and the errors for those
// that cannot give a shared key.
func TestParseConnectionStringForms(t *testing.T) {
	t.Parallel()
	const key = "U0VDUkVULUtFWS1CWVRFUw==" // base64("SECRET-KEY-BYTES")
	for _, tc := range []struct {
		cs, wantURL, wantAccount string
	}{
		{"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + key + ";EndpointSuffix=core.windows.net",
			"https://acct.table.core.windows.net", "acct"},
		{"AccountName=acct;AccountKey=" + key, "https://acct.table.core.windows.net", "acct"},
		{"DefaultEndpointsProtocol=http;AccountName=acct;AccountKey=" + key + ";EndpointSuffix=core.chinacloudapi.cn;",
			"http://acct.table.core.chinacloudapi.cn", "acct"},
		{" accountname = acct ; ACCOUNTKEY=" + key + " ;defaultendpointsprotocol=HTTPS;;", "https://acct.table.core.windows.net", "acct"},
		{"DefaultEndpointsProtocol=https;AccountName=cosmos-acct;AccountKey=" + key + ";TableEndpoint=https://cosmos-acct.table.cosmos.azure.com:443/;",
			"https://cosmos-acct.table.cosmos.azure.com:443", "cosmos-acct"},
		{"DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" + key +
			";BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;QueueEndpoint=http://127.0.0.1:10001/devstoreaccount1;TableEndpoint=http://127.0.0.1:10002/devstoreaccount1;",
			"http://127.0.0.1:10002/devstoreaccount1", "devstoreaccount1"},
		{"AccountName=acct;AccountKey=" + key + ";SharedAccessSignature=sv=2019-02-02&sig=abc", "https://acct.table.core.windows.net", "acct"},
		{"UseDevelopmentStorage=true", "http://127.0.0.1:10002/devstoreaccount1", "devstoreaccount1"},
		{"usedevelopmentstorage=TRUE;", "http://127.0.0.1:10002/devstoreaccount1", "devstoreaccount1"},
	} {
		u, cred, err := table.ParseConnectionString(tc.cs)
		if err != nil {
			t.Errorf("ParseConnectionString(%q): %v", tc.cs, err)
			continue
		}
		if u != tc.wantURL || cred.AccountName() != tc.wantAccount {
			t.Errorf("ParseConnectionString(%q) = %s, account %s; want %s, account %s", tc.cs, u, cred.AccountName(), tc.wantURL, tc.wantAccount)
		}
	}

	for _, tc := range []struct{ what, cs, want string }{
		{"empty", "", "empty"},
		{"only separators", " ; ;", "empty"},
		{"SAS only", "TableEndpoint=https://acct.table.core.windows.net;AccountName=acct;SharedAccessSignature=sv=2019-02-02&sig=SECRET", "SharedAccessSignature"},
		{"no key", "AccountName=acct", "no AccountKey"},
		{"empty key", "AccountName=acct;AccountKey=", "no AccountKey"},
		{"no account", "AccountKey=" + key, "no AccountName"},
		{"key not base64", "AccountName=acct;AccountKey=SECRET*not*base64", "base64"},
		{"key twice", "AccountName=acct;AccountKey=" + key + ";accountkey=" + key, "AccountKey is set twice"},
		{"unknown setting twice", "AccountName=acct;AccountKey=" + key + ";X=1;x=2", "setting 4 repeats"},
		{"no equals sign", "AccountName=acct;" + "SECRETKEY", "setting 2 is not of the form"},
		{"no name", "AccountName=acct;=SECRET", "setting 2 is not of the form"},
		{"bad protocol", "DefaultEndpointsProtocol=ftp;AccountName=acct;AccountKey=" + key, "DefaultEndpointsProtocol"},
		{"bad endpoint", "TableEndpoint=127.0.0.1:10002/x?sig=SECRET;AccountName=acct;AccountKey=" + key, "TableEndpoint"},
		{"endpoint with a user", "TableEndpoint=https://me:SECRET@acct.table.core.windows.net;AccountName=acct;AccountKey=" + key, "TableEndpoint"},
		{"account not a host name", "AccountName=my acct;AccountKey=" + key, "AccountName"},
		{"bad suffix", "AccountName=acct;AccountKey=" + key + ";EndpointSuffix=core.windows.net/x", "EndpointSuffix"},
		{"empty suffix", "AccountName=acct;AccountKey=" + key + ";EndpointSuffix=", "EndpointSuffix"},
		{"development storage false", "UseDevelopmentStorage=false", "UseDevelopmentStorage"},
		{"development storage with a proxy", "UseDevelopmentStorage=true;DevelopmentStorageProxyUri=http://proxy", "no other settings"},
	} {
		_, cred, err := table.ParseConnectionString(tc.cs)
		var te *table.Error
		if !errors.As(err, &te) || te.Op != "connection string" || !errors.Is(err, table.ErrInvalid) || cred != nil {
			t.Errorf("%s: %v, want a *table.Error satisfying ErrInvalidConnectionString", tc.what, err)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tc.want) {
			t.Errorf("%s: error %q does not say %q", tc.what, msg, tc.want)
		}
		for _, secret := range []string{key, "SECRET", "sig="} {
			if strings.Contains(msg, secret) {
				t.Errorf("%s: error shows %q: %s", tc.what, secret, msg)
			}
		}
	}
}
