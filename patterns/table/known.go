package table

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"hash"
	"log/slog"
	"net/http"
	"net/url"
	goruntime "runtime"
	"strings"
	"sync"
	"time"
	"weak"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// What tablekit knows of a table client. aztables keeps a client's table
// name, endpoint and pipeline to itself, and tablekit reads no other
// module's unexported state: it records them when it builds a client
// (NewServiceClient, NewServiceClientFromConnectionString,
// NewClientFromSASURL, NewClient) or when the application describes one
// (Describe), keyed weakly by the client's pointer, so that a client the
// program drops is forgotten with it.

// moduleVersion is tablekit's version in the User-Agent of the requests
// its pipeline sends (azsdk-go-tablekit/<version>).
const moduleVersion = "v0.1.0"

// account is a table service as tablekit built it.
type account struct {
	endpoint string   // the service URL, without its query or a trailing slash
	base     *url.URL // endpoint, parsed
	sas      string   // the service URL's query string (a SAS), or ""
	profile  *Profile // ProfileFor(endpoint)
	// pl is tablekit's own pipeline for the service: the same
	// authentication, client options (retry policy, transport, logging,
	// tracing) and service version as the SDK client built beside it.
	pl runtime.Pipeline
}

// about is what tablekit knows of one table client.
type about struct {
	name    string
	profile *Profile // nil: unknown (Portable, said once in the log)
	acct    *account // nil: a client tablekit did not build (the SDK's path)
}

var (
	services sync.Map // weak.Pointer[aztables.ServiceClient] -> *account
	clients  sync.Map // weak.Pointer[aztables.Client] -> *about
)

// remember records v for p until p is garbage collected.
func remember[T any](m *sync.Map, p *T, v any) {
	if p == nil {
		return
	}
	k := weak.Make(p)
	if _, loaded := m.Swap(k, v); !loaded {
		goruntime.AddCleanup(p, func(k weak.Pointer[T]) { m.Delete(k) }, k)
	}
}

// aboutClient returns what tablekit knows of c; an unknown client has no
// name and no profile.
func aboutClient(c *aztables.Client) *about {
	if v, ok := clients.Load(weak.Make(c)); ok {
		return v.(*about)
	}
	return &about{}
}

// accountOf returns the account of a service client tablekit built, or
// nil.
func accountOf(svc *aztables.ServiceClient) *account {
	if v, ok := services.Load(weak.Make(svc)); ok {
		return v.(*account)
	}
	return nil
}

var unknownOnce sync.Once

// resolvedProfile returns the profile a is known to have, else Portable (the
// strictest: no key order assumed, both services' limits), which it says
// once per process in slog.Default's log.
func (a *about) resolvedProfile() *Profile {
	if a.profile != nil {
		return a.profile
	}
	unknownOnce.Do(func() {
		slog.Default().Warn("tablekit: a table client whose service tablekit cannot know (built with aztables directly, not by table.NewServiceClient*, NewClient or NewClientFromSASURL): it follows table.Portable, the limits of both services and no key order; build clients with tablekit's constructors, or say what they are with table.Describe")
	})
	return Portable
}

// NewClient returns the client of the table called name in the service
// svc, as svc.NewClient(name) does, recording for tablekit what aztables
// keeps to itself: the table's name and, when tablekit built svc, its
// endpoint (and with it the service's Profile) and pipeline. Build table
// clients with it rather than with svc.NewClient: a client tablekit does
// not know follows Portable (see Describe). Calling it again for the same
// name returns another client of the same table.
func NewClient(svc *aztables.ServiceClient, name string) *aztables.Client {
	c := svc.NewClient(name)
	a := &about{name: name}
	if acct := accountOf(svc); acct != nil {
		a.acct, a.profile = acct, acct.profile
	}
	remember(&clients, c, a)
	return c
}

// Describe tells tablekit what it cannot learn from a client the
// application built with aztables itself: the table's name (for errors,
// spans, and the packages that address tables by name, such as eventual)
// and the profile of its service (ProfileFor(serviceURL) for an endpoint
// you know, or Storage, Cosmos or Portable). A nil p leaves the profile
// unknown: Portable. It returns c, and changes how Tables built from c
// afterwards behave; call it before New. Clients built by tablekit's
// constructors need no description.
//
// For a client tablekit built (NewClient, NewClientFromSASURL), Describe
// changes only the profile (a Cosmos DB account behind a proxy or custom
// domain whose endpoint looks like Table Storage's): its name stays the
// table it addresses, and a nil p leaves its endpoint's profile. A nil c
// returns nil.
//
// Without a description, a client tablekit did not build has no name and
// follows Portable, the strictest profile, which it says once in the log:
// never Storage, whose key-order guarantees a Cosmos DB account does not
// keep.
func Describe(c *aztables.Client, name string, p *Profile) *aztables.Client {
	if c == nil {
		return nil
	}
	old := aboutClient(c)
	if old.acct != nil { // built by tablekit: its name is the table its requests address
		name = old.name
		if p == nil {
			p = old.acct.profile
		}
	}
	remember(&clients, c, &about{name: name, profile: p, acct: old.acct})
	return c
}

// newAccount builds the account of the service at serviceURL (its query,
// a SAS, kept apart) with auth, nil for a SAS, and the client options o.
func newAccount(serviceURL string, auth policy.Policy, o *aztables.ClientOptions) (*account, error) {
	// The whole URL is checked (a control character in a SAS, a
	// fragment), and no part of it is quoted: it may hold a signature.
	if whole, err := url.Parse(serviceURL); err != nil || whole.Fragment != "" || strings.Contains(serviceURL, "#") {
		return nil, fmt.Errorf("%w: the service URL is not a URL without a fragment", ErrInvalid)
	}
	base, sas, _ := strings.Cut(serviceURL, "?")
	base = strings.TrimRight(base, "/")
	u, err := url.Parse(base)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil {
		return nil, fmt.Errorf("%w: the service URL is not an http or https URL with a host", ErrInvalid)
	}
	pl := runtime.PipelineOptions{Tracing: runtime.TracingOptions{Namespace: "Microsoft.Tables"}}
	if auth != nil {
		pl.PerRetry = []policy.Policy{auth}
	}
	var co policy.ClientOptions
	if o != nil {
		co = o.ClientOptions
	}
	return &account{endpoint: base, base: u, sas: sas, profile: ProfileFor(base),
		pl: runtime.NewPipeline("tablekit", moduleVersion, pl, &co)}, nil
}

// bearerScope is the OAuth scope of a table service, as the newest
// aztables asks for (whose cloud configuration's meaning changed in
// v1.4.1, so it is not read here): Table Storage has one audience in
// every cloud; the Cosmos DB Table API has one per cloud, chosen by the
// options' cloud (a custom cloud's Cosmos DB audience, when its
// aztables.ServiceName configuration names one).
func bearerScope(serviceURL string, o *aztables.ClientOptions) string {
	if ProfileFor(serviceURL) != Cosmos {
		return "https://storage.azure.com/.default"
	}
	audience := "https://cosmos.azure.com"
	if o != nil {
		switch cfg, ok := o.Cloud.Services[aztables.ServiceName]; {
		case o.Cloud.ActiveDirectoryAuthorityHost == cloud.AzureChina.ActiveDirectoryAuthorityHost:
			audience = "https://cosmos.azure.cn"
		case o.Cloud.ActiveDirectoryAuthorityHost == cloud.AzureGovernment.ActiveDirectoryAuthorityHost:
			audience = "https://cosmos.azure.us"
		case ok && strings.Contains(cfg.Audience, "cosmos"):
			audience = strings.TrimRight(cfg.Audience, "/")
		}
	}
	return audience + "/.default"
}

// sharedKey signs requests with an account key, as the Table service's
// Shared Key Lite scheme defines (and aztables signs): an HMAC-SHA256 of
// the x-ms-date header and the canonicalized resource, "/" + account +
// the URL's escaped path, and "?comp=" + its comp parameter when it has
// one.
type sharedKey struct {
	account string
	key     []byte
	macs    sync.Pool // of hash.Hash, keyed with key
}

func newSharedKey(account, key string) (*sharedKey, error) {
	k, err := base64.StdEncoding.DecodeString(key)
	if err != nil {
		return nil, fmt.Errorf("%w: the account key is not valid base64", errInvalidConnectionString)
	}
	s := &sharedKey{account: account, key: k}
	s.macs.New = func() any { return hmac.New(sha256.New, s.key) }
	return s, nil
}

// Do signs the request. A retry keeps the first try's x-ms-date, as the
// SDK's policy does.
func (s *sharedKey) Do(req *policy.Request) (*http.Response, error) {
	raw := req.Raw()
	date := raw.Header.Get("x-ms-date")
	if date == "" {
		date = time.Now().UTC().Format(http.TimeFormat)
		raw.Header.Set("x-ms-date", date)
	}
	auth, err := s.authorization(date, raw.URL)
	if err != nil {
		return nil, err
	}
	raw.Header.Set("Authorization", auth)
	return req.Next()
}

// authorization returns the Authorization header of a request to u sent
// at date.
func (s *sharedKey) authorization(date string, u *url.URL) (string, error) {
	var buf [512]byte
	b := append(buf[:0], date...)
	b = append(b, '\n', '/')
	b = append(b, s.account...)
	if p := u.EscapedPath(); p != "" {
		b = append(b, p...)
	} else {
		b = append(b, '/')
	}
	// Only a query that may name comp (perhaps percent-encoded) is parsed;
	// one that cannot be parsed is not signed, as the SDK signs none.
	if q := u.RawQuery; strings.Contains(q, "comp") || strings.Contains(q, "%") {
		q, err := url.ParseQuery(u.RawQuery)
		if err != nil {
			return "", fmt.Errorf("%w: the request's query string cannot be parsed to sign it", ErrInvalid)
		}
		if len(q["comp"]) > 0 {
			b = append(b, "?comp="...)
			b = append(b, q["comp"][0]...)
		}
	}
	mac := s.macs.Get().(hash.Hash)
	mac.Reset()
	mac.Write(b)
	var sum [sha256.Size]byte
	sig := mac.Sum(sum[:0])
	s.macs.Put(mac)
	out := make([]byte, 0, len("SharedKeyLite ")+len(s.account)+1+base64.StdEncoding.EncodedLen(len(sig)))
	out = append(out, "SharedKeyLite "...)
	out = append(out, s.account...)
	out = append(out, ':')
	out = base64.StdEncoding.AppendEncode(out, sig)
	return string(out), nil
}
