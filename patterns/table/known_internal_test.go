package table

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// recorder answers every request with status and body, keeping a copy of
// each request: what the SDK sends, for comparing signatures. It stands in
// for no service behaviour (answers are not checked).
type recorder struct {
	status int
	header http.Header
	body   string
	reqs   []*http.Request
}

func (r *recorder) Do(req *http.Request) (*http.Response, error) {
	r.reqs = append(r.reqs, req.Clone(context.Background()))
	h := http.Header{"Content-Type": {"application/json"}}
	for k, v := range r.header {
		h[k] = v
	}
	return &http.Response{StatusCode: r.status, Header: h, Body: io.NopCloser(strings.NewReader(r.body)), Request: req}, nil
}

// TestSharedKeyMatchesSDK: tablekit's Shared Key Lite signer gives, byte
// for byte, the Authorization header aztables' own policy gives, over a
// corpus of every kind of request the SDK makes: table and service
// operations, entity operations with keys that need escaping, queries with
// filters and continuations, transactions, and comp= requests.
func TestSharedKeyMatchesSDK(t *testing.T) {
	const account, key = "acct1", "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
	for _, endpoint := range []string{"https://acct1.table.core.windows.net", "http://127.0.0.1:10002/devstoreaccount1"} {
		rec := &recorder{status: 200, body: `{"value":[]}`, header: http.Header{"X-Ms-Continuation-Nextpartitionkey": {"1!8!cGsx"}, "X-Ms-Continuation-Nextrowkey": {"1!12!cm93IDI-"}}}
		cred, err := aztables.NewSharedKeyCredential(account, key)
		if err != nil {
			t.Fatal(err)
		}
		svc, err := aztables.NewServiceClientWithSharedKey(endpoint, cred, &aztables.ClientOptions{ClientOptions: policy.ClientOptions{Transport: rec, Retry: policy.RetryOptions{MaxRetries: -1}}})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		keys := []string{"plain", "with space", "quote'd", "percent%25", "é-ü-日本", "hash#q?x=1", "plus+amp&eq=", "slash/back\\", "semi;colon:comma,"}
		c := svc.NewClient("Tbl1")
		_, _ = svc.CreateTable(ctx, "Tbl2", nil)
		_, _ = svc.DeleteTable(ctx, "Tbl2", nil)
		filter := "PartitionKey eq 'a b' and RowKey ge 'x''y'"
		_, _ = svc.NewListTablesPager(&aztables.ListTablesOptions{Filter: &filter}).NextPage(ctx)
		_, _ = svc.GetProperties(ctx, nil)
		_, _ = svc.GetStatistics(ctx, nil)
		_, _ = c.GetAccessPolicy(ctx, nil)
		_, _ = c.SetAccessPolicy(ctx, nil)
		for _, k := range keys {
			entity := []byte(`{"PartitionKey":"` + strings.ReplaceAll(k, `\`, `\\`) + `","RowKey":"r"}`)
			_, _ = c.GetEntity(ctx, k, k, nil)
			_, _ = c.AddEntity(ctx, entity, nil)
			_, _ = c.UpdateEntity(ctx, entity, &aztables.UpdateEntityOptions{UpdateMode: aztables.UpdateModeMerge})
			_, _ = c.UpsertEntity(ctx, entity, &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeReplace})
			_, _ = c.DeleteEntity(ctx, k, k, nil)
		}
		top := int32(3)
		sel := "PartitionKey,RowKey,Name"
		pager := c.NewListEntitiesPager(&aztables.ListEntitiesOptions{Filter: &filter, Select: &sel, Top: &top})
		_, _ = pager.NextPage(ctx)
		_, _ = pager.NextPage(ctx) // with the continuation
		_, _ = c.SubmitTransaction(ctx, []aztables.TransactionAction{{ActionType: aztables.TransactionTypeAdd, Entity: []byte(`{"PartitionKey":"p","RowKey":"r"}`)}}, nil)
		if len(rec.reqs) < 50 {
			t.Fatalf("%s: %d requests recorded, want the whole corpus", endpoint, len(rec.reqs))
		}
		sk, err := newSharedKey(account, key)
		if err != nil {
			t.Fatal(err)
		}
		for _, req := range rec.reqs {
			want := req.Header.Get("Authorization")
			date := req.Header.Get("x-ms-date")
			if !strings.HasPrefix(want, "SharedKeyLite ") || date == "" {
				t.Fatalf("%s %s: the SDK sent Authorization %q, x-ms-date %q", req.Method, req.URL, want, date)
			}
			if got, err := sk.authorization(date, req.URL); err != nil || got != want {
				t.Errorf("%s %s: Authorization %q (%v), the SDK's %q", req.Method, req.URL, got, err, want)
			}
		}
	}
}

// The signer itself: a request through a pipeline with it gets the date
// it lacked and keeps a retry's first date.
func TestSharedKeyPolicy(t *testing.T) {
	sk, err := newSharedKey("a", "a2V5")
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{status: 200}
	acct, err := newAccount("https://a.table.core.windows.net", sk, &aztables.ClientOptions{ClientOptions: policy.ClientOptions{Transport: rec, Retry: policy.RetryOptions{MaxRetries: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	d := &direct{pl: acct.pl, endpoint: acct.endpoint, base: acct.base, table: "t"}
	if _, _, err := d.get(context.Background(), "p", "r"); err != nil {
		t.Fatal(err)
	}
	req := rec.reqs[0]
	date, err := time.Parse(http.TimeFormat, req.Header.Get("x-ms-date"))
	if err != nil || time.Since(date) > time.Hour {
		t.Fatalf("x-ms-date %q: %v", req.Header.Get("x-ms-date"), err)
	}
	want, err := sk.authorization(req.Header.Get("x-ms-date"), req.URL)
	if got := req.Header.Get("Authorization"); err != nil || got != want || !bytes.HasPrefix([]byte(got), []byte("SharedKeyLite a:")) {
		t.Fatalf("Authorization %q, want %q", got, want)
	}
	if _, err := newSharedKey("a", "not base64!"); err == nil {
		t.Fatal("a key that is not base64 was taken")
	}
}

// tokens records the scopes it is asked for.
type tokens struct{ scopes [][]string }

func (c *tokens) GetToken(_ context.Context, o policy.TokenRequestOptions) (azcore.AccessToken, error) {
	c.scopes = append(c.scopes, o.Scopes)
	return azcore.AccessToken{Token: "tok", ExpiresOn: time.Now().Add(time.Hour)}, nil
}

// TestBearerScopes: NewServiceClient's pipeline asks Microsoft Entra ID for
// the audience of the service and cloud (storage's, the same in every
// cloud; or the cloud's Cosmos DB audience for a Cosmos DB Table API
// endpoint), as the newest aztables does, and sends the token. (With
// aztables v1.4.1 the cloud configuration's audience became Cosmos DB's:
// make drift caught tablekit asking for it on Table Storage.)
func TestBearerScopes(t *testing.T) {
	for _, tc := range []struct {
		url   string
		cloud string
		want  string
	}{
		{"https://acct.table.core.windows.net", "", "https://storage.azure.com/.default"},
		{"https://acct.table.core.chinacloudapi.cn", "china", "https://storage.azure.com/.default"},
		{"https://acct.table.cosmos.azure.cn", "china", "https://cosmos.azure.cn/.default"},
		{"https://acct.table.cosmos.azure.com", "", "https://cosmos.azure.com/.default"},
		{"https://acct.table.cosmos.azure.us", "gov", "https://cosmos.azure.us/.default"},
	} {
		o := ClientOptions()
		switch tc.cloud {
		case "china":
			o.Cloud = cloud.AzureChina
		case "gov":
			o.Cloud = cloud.AzureGovernment
		}
		rec := &recorder{status: 200}
		o.Transport = rec
		cred := &tokens{}
		svc, err := NewServiceClient(tc.url, cred, o)
		if err != nil {
			t.Fatal(err)
		}
		acct := accountOf(svc)
		if acct == nil {
			t.Fatalf("%s: NewServiceClient's account not recorded", tc.url)
		}
		d := &direct{pl: acct.pl, endpoint: acct.endpoint, base: acct.base, table: "t"}
		if _, _, err := d.get(context.Background(), "p", "r"); err != nil {
			t.Fatal(err)
		}
		if len(cred.scopes) != 1 || len(cred.scopes[0]) != 1 || cred.scopes[0][0] != tc.want {
			t.Errorf("%s: scopes %v, want [[%s]]", tc.url, cred.scopes, tc.want)
		}
		if got := rec.reqs[0].Header.Get("Authorization"); got != "Bearer tok" {
			t.Errorf("%s: Authorization %q", tc.url, got)
		}
	}
	if _, err := NewServiceClient("https://acct.table.core.windows.net", nil, nil); err == nil {
		t.Error("a nil credential was taken")
	}
}

// What Describe may change of a client tablekit built (the profile, not the
// table it addresses), and inputs NewClientFromSASURL and the signer
// refuse without a panic or a signature in the error.
func TestDescribeAndSASURLEdges(t *testing.T) {
	svc, err := NewServiceClientFromConnectionString("AccountName=acct1;AccountKey=a2V5", nil)
	if err != nil {
		t.Fatal(err)
	}
	c := NewClient(svc, "t1")
	if Describe(nil, "x", Storage) != nil {
		t.Fatal("Describe(nil) returned a client")
	}
	if a := aboutClient(Describe(c, "other", nil)); a.name != "t1" || a.profile != Storage || directOf(a) == nil {
		t.Fatalf("Describe of a built client with another name and no profile: %+v", a)
	}
	if a := aboutClient(Describe(c, "t1", Cosmos)); a.profile != Cosmos || directOf(a) != nil {
		t.Fatalf("Describe of a built client as Cosmos DB: profile %s, direct %v", a.profile.Name, directOf(a) != nil)
	}
	cosmos, err := NewClientFromSASURL("https://acct1.table.cosmos.azure.com/t1?sig=x", nil)
	if err != nil {
		t.Fatal(err)
	}
	if a := aboutClient(Describe(cosmos, "t1", Storage)); directOf(a) != nil {
		t.Fatal("a Cosmos DB endpoint described as Table Storage took the direct path")
	}

	const secret = "SECRETSIG"
	for _, u := range []string{
		"https://host#f/t1?sig=" + secret,
		"https://host/t1?sig=" + secret + "\n",
		"https://acct1.table.core.windows.net/?sig=" + secret,
		"https://acct1.table.core.windows.net?sig=" + secret,
		"not a url at all sig=" + secret,
	} {
		c, err := NewClientFromSASURL(u, nil)
		if c != nil || !errors.Is(err, ErrInvalid) || strings.Contains(err.Error(), secret) {
			t.Errorf("NewClientFromSASURL(%q) = %v, %v; want ErrInvalid without the signature", u, c, err)
		}
	}
	for _, u := range []string{"https://acct1.table.core.windows.net/t1/?sv=1&sig=x", "https://acct1.table.core.windows.net/t1?sv=1&sig=x"} {
		c, err := NewClientFromSASURL(u, nil)
		if err != nil {
			t.Fatal(err)
		}
		if a := aboutClient(c); a.name != "t1" || a.acct.endpoint != "https://acct1.table.core.windows.net" || a.acct.sas != "sv=1&sig=x" {
			t.Errorf("NewClientFromSASURL(%q): name %q, endpoint %q, sas %q", u, a.name, a.acct.endpoint, a.acct.sas)
		}
	}
	if _, err := NewServiceClientFromConnectionString("TableEndpoint=https://h/?x=1;AccountName=a;AccountKey=a2V5", nil); !errors.Is(err, errInvalidConnectionString) {
		t.Errorf("a TableEndpoint with a query: %v", err)
	}
	if _, err := NewServiceClientFromConnectionString("AccountName=a;AccountKey=a2V5;EndpointSuffix=../"+secret, nil); err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("a bad EndpointSuffix: %v; want an error that does not quote it", err)
	}
	sk, err := newSharedKey("a", "a2V5")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sk.authorization("d", &url.URL{Path: "/t", RawQuery: "comp=%zz"}); err == nil {
		t.Error("a query that cannot be parsed was signed")
	}
}
