package table

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/tablekit/tablekit/internal/invalid"
	"github.com/tablekit/tablekit/internal/obs"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/internal/redact"
	"github.com/tablekit/tablekit/retry"
)

// ClientOptions returns aztables client options that use retry.Default in
// place of azcore's built-in retry, and tablekit's tracing provider for
// spans of the requests made under a recording span: what tablekit's
// constructors use when given nil options. Adjust the result, or install
// another policy with retry.Policy.ApplyTo. Its azcore.ClientOptions
// (retry policy and TracingProvider) suit queue and blob clients too:
//
//	qopts := &azqueue.ClientOptions{ClientOptions: table.ClientOptions().ClientOptions}
//
// The tracing provider is OpenTelemetry through azotel: every SDK call made
// under a recording span (your own) is recorded as child spans (the SDK
// method's, then "HTTP GET" with the SDK's attributes), in that span's
// tracer provider, their texts cut as the package documentation's
// Observability section says (a URL names the table, queue or container,
// without the entity's keys, a blob's name or the query string). Calls
// made without a recording span record nothing; tablekit's own operations
// trace their requests whatever the client's options.
func ClientOptions() *aztables.ClientOptions {
	o := &aztables.ClientOptions{}
	retry.Default.ApplyTo(&o.ClientOptions)
	o.TracingProvider = obs.TracingProvider()
	return o
}

// NewServiceClientFromConnectionString builds a table service client from
// a connection string (Azure Storage, Cosmos DB Table API, or an emulator:
// see ParseConnectionString; a SAS is SharedAccessSignature with
// TableEndpoint or AccountName), and tablekit's own pipeline beside it, with the same
// authentication and options: the clients NewClient makes from it are
// known to tablekit (their name, endpoint, Profile), and Tables of them
// on Table Storage send their requests through that pipeline. With nil
// opts it uses ClientOptions(): the guide's retry policy instead of
// azcore's. Options you pass are used as they are. Errors match
// ErrInvalid and never hold the key or a signature.
func NewServiceClientFromConnectionString(connStr string, opts *aztables.ClientOptions) (*aztables.ServiceClient, error) {
	cs, err := parseConnectionString(connStr)
	if err != nil {
		return nil, err
	}
	if cs.key == "" {
		return newServiceClient(cs.serviceURL+"?"+cs.sas, nil, opts, aztables.NewServiceClientWithNoCredential)
	}
	key, err := newSharedKey(cs.account, cs.key)
	if err != nil {
		return nil, err
	}
	cred, err := aztables.NewSharedKeyCredential(cs.account, cs.key)
	if err != nil {
		return nil, connStrError("AccountKey is not valid base64")
	}
	return newServiceClient(cs.serviceURL, key, opts, func(u string, o *aztables.ClientOptions) (*aztables.ServiceClient, error) {
		return aztables.NewServiceClientWithSharedKey(u, cred, o)
	})
}

// NewServiceClient builds a table service client for serviceURL that
// authenticates with cred (Microsoft Entra ID, from azidentity: tokens of
// the storage audience, which is the same in every cloud, or for a Cosmos
// DB Table API endpoint of the Cosmos DB audience of opts' cloud), and
// tablekit's own pipeline
// beside it, as NewServiceClientFromConnectionString does. With nil opts
// it uses ClientOptions().
func NewServiceClient(serviceURL string, cred azcore.TokenCredential, opts *aztables.ClientOptions) (*aztables.ServiceClient, error) {
	if cred == nil {
		return nil, fmt.Errorf("table.NewServiceClient: %w: nil credential", ErrInvalid)
	}
	return newServiceClient(serviceURL, runtime.NewBearerTokenPolicy(cred, []string{bearerScope(serviceURL, opts)}, nil), opts, func(u string, o *aztables.ClientOptions) (*aztables.ServiceClient, error) {
		return aztables.NewServiceClient(u, cred, o)
	})
}

// newServiceClient builds the SDK's service client with build and the
// account beside it, and records the account for NewClient.
func newServiceClient(serviceURL string, auth policy.Policy, opts *aztables.ClientOptions, build func(string, *aztables.ClientOptions) (*aztables.ServiceClient, error)) (*aztables.ServiceClient, error) {
	if opts == nil {
		opts = ClientOptions()
	}
	acct, err := newAccount(serviceURL, auth, opts)
	if err != nil {
		return nil, err
	}
	svc, err := build(serviceURL, opts)
	if err != nil {
		return nil, err
	}
	remember(&services, svc, acct)
	return svc, nil
}

// NewClientFromSASURL builds a client for one table from a SAS URL (see
// SASURL), https://<account>.table.core.windows.net/<table>?<token>,
// known to tablekit as NewClient's clients are. With nil opts it uses
// ClientOptions(). Errors never quote the URL (it holds a signature).
func NewClientFromSASURL(sasURL string, opts *aztables.ClientOptions) (*aztables.Client, error) {
	if opts == nil {
		opts = ClientOptions()
	}
	u, err := url.Parse(sasURL)
	if err != nil || u.Fragment != "" || strings.Contains(sasURL, "#") {
		return nil, fmt.Errorf("table.NewClientFromSASURL: %w: not a URL without a fragment", ErrInvalid)
	}
	path := strings.TrimRight(u.EscapedPath(), "/")
	i := strings.LastIndexByte(path, '/')
	if i < 0 || path[i+1:] == "" {
		return nil, fmt.Errorf("table.NewClientFromSASURL: %w: the URL names no table (a service SAS URL goes to NewServiceClientFromConnectionString as TableEndpoint and SharedAccessSignature)", ErrInvalid)
	}
	name, err := url.PathUnescape(path[i+1:])
	if err != nil {
		return nil, fmt.Errorf("table.NewClientFromSASURL: %w: the table name is not a valid URL path segment", ErrInvalid)
	}
	// The SDK is given the same URL, normalised: no trailing slash, which
	// it would take as a table of no name under a service at the table.
	base := u.Scheme + "://" + u.Host + path
	acct, err := newAccount(u.Scheme+"://"+u.Host+path[:i]+"?"+u.RawQuery, nil, opts)
	if err != nil {
		return nil, fmt.Errorf("table.NewClientFromSASURL: %w", err)
	}
	c, err := aztables.NewClientWithNoCredential(base+"?"+u.RawQuery, opts)
	if err != nil {
		return nil, fmt.Errorf("table.NewClientFromSASURL: %w", redact.Error(err))
	}
	remember(&clients, c, &about{name: name, profile: acct.profile, acct: acct})
	return c, nil
}

// errInvalidConnectionString matches ErrInvalid: a connection string ParseConnectionString
// cannot turn into a table service URL and a shared key (or
// NewServiceClientFromConnectionString into a service URL and a shared key
// or SAS): a malformed setting, no AccountName or AccountKey (a SAS-only
// connection string, for ParseConnectionString), a
// key that is not base64, an endpoint that is not an http(s) URL.
var errInvalidConnectionString error = invalid.New("invalid connection string")

// The storage emulator's well-known account, for UseDevelopmentStorage=true.
// Microsoft publishes this key; it is not a secret.
const (
	devStorageAccount = "devstoreaccount1"
	devStorageKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
	devStorageTables  = "http://127.0.0.1:10002/" + devStorageAccount
)

// connStrNames are the settings ParseConnectionString reads, lower-cased.
var connStrNames = map[string]string{
	"accountname": "AccountName", "accountkey": "AccountKey", "tableendpoint": "TableEndpoint",
	"defaultendpointsprotocol": "DefaultEndpointsProtocol", "endpointsuffix": "EndpointSuffix",
	"sharedaccesssignature": "SharedAccessSignature", "usedevelopmentstorage": "UseDevelopmentStorage",
	"developmentstorageproxyuri": "DevelopmentStorageProxyUri",
}

// accountName is what ParseConnectionString accepts as an account name
// when it builds the host name from it: Azure Storage (lower-case letters
// and digits) and Cosmos DB (also hyphens) accounts.
var accountName = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?$`)

// ParseConnectionString returns the table service URL and the shared key
// credential of a storage connection string, so that code signing a SAS
// (SASURL) or building a client (aztables.NewServiceClientWithSharedKey)
// takes them from configuration instead of hard-coding the key. It is
// pure (no round trip) and safe for concurrent use. It accepts:
//
//   - TableEndpoint=URL;AccountName=NAME;AccountKey=KEY, as for an
//     emulator, a Cosmos DB account or a custom domain: the service URL is
//     TableEndpoint, without a trailing slash.
//   - AccountName=NAME;AccountKey=KEY, with optional
//     DefaultEndpointsProtocol (default https) and EndpointSuffix (default
//     core.windows.net): the service URL is https://NAME.table.core.windows.net.
//   - UseDevelopmentStorage=true: the emulator's well-known account at
//     http://127.0.0.1:10002/devstoreaccount1 (the SDK does not understand
//     this form).
//
// Setting names are case-insensitive and other settings (BlobEndpoint,
// QueueEndpoint, ...) are ignored. A connection string with a
// SharedAccessSignature but no AccountKey is an error: a SAS cannot sign
// requests or other SAS; give its token to NewClientFromSASURL instead.
//
// Errors are *Error with Op "connection string" that satisfy
// errors.Is(err, ErrInvalid). They name settings, never
// their values, so they never contain the key or a signature.
func ParseConnectionString(connStr string) (serviceURL string, cred *aztables.SharedKeyCredential, err error) {
	cs, err := parseConnectionString(connStr)
	if err != nil {
		return "", nil, err
	}
	if cs.key == "" {
		return "", nil, cs.noKey()
	}
	// Not the SDK's error: its text is its own business, and must not
	// come to include the key. (parseConnectionString checked the key.)
	if cred, err = aztables.NewSharedKeyCredential(cs.account, cs.key); err != nil {
		return "", nil, connStrError("AccountKey is not valid base64")
	}
	return cs.serviceURL, cred, nil
}

// connSettings is a parsed connection string: a service URL and an account
// key, or a SAS (without a key).
type connSettings struct {
	serviceURL, account, key, sas string
}

func connStrError(format string, args ...any) error {
	return &Error{Op: "connection string", Err: invalid.Marked(errInvalidConnectionString, fmt.Errorf(format, args...))}
}

// noKey is ParseConnectionString's error for a connection string without
// an AccountKey.
func (c connSettings) noKey() error {
	if c.sas != "" {
		return connStrError("it has a SharedAccessSignature and no AccountKey; a SAS cannot sign, so use its token with NewClientFromSASURL")
	}
	return connStrError("no AccountKey")
}

// parseConnectionString parses connStr for ParseConnectionString and
// NewServiceClientFromConnectionString: with an AccountKey, or with a
// SharedAccessSignature and no key (cs.key "").
func parseConnectionString(connStr string) (cs connSettings, err error) {
	fail := func(format string, args ...any) (connSettings, error) {
		return connSettings{}, connStrError(format, args...)
	}
	settings := map[string]string{}
	for i, part := range strings.Split(connStr, ";") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		k = strings.ToLower(strings.TrimSpace(k))
		if !ok || k == "" {
			return fail("setting %d is not of the form Name=value", i+1)
		}
		if _, dup := settings[k]; dup {
			if name, known := connStrNames[k]; known {
				return fail("%s is set twice", name)
			}
			return fail("setting %d repeats an earlier setting's name", i+1)
		}
		settings[k] = strings.TrimSpace(v)
	}
	if len(settings) == 0 {
		return fail("it is empty")
	}
	if v, ok := settings["usedevelopmentstorage"]; ok {
		if !strings.EqualFold(v, "true") {
			return fail("UseDevelopmentStorage must be true when set")
		}
		if len(settings) > 1 {
			return fail("UseDevelopmentStorage=true takes no other settings; for a proxy or other ports give TableEndpoint, AccountName and AccountKey")
		}
		settings = map[string]string{"accountname": devStorageAccount, "accountkey": devStorageKey, "tableendpoint": devStorageTables}
	}
	account, key := settings["accountname"], settings["accountkey"]
	cs = connSettings{account: account, key: key, sas: strings.TrimPrefix(settings["sharedaccesssignature"], "?")}
	switch {
	case key == "" && cs.sas == "":
		return fail("no AccountKey")
	case key != "" && account == "":
		return fail("no AccountName")
	case key != "":
		if _, kerr := base64.StdEncoding.DecodeString(key); kerr != nil {
			return fail("AccountKey is not valid base64")
		}
	}
	if ep := settings["tableendpoint"]; ep != "" {
		u, perr := url.Parse(ep)
		if perr != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(ep, "?#") {
			return fail("TableEndpoint is not an http or https URL with a host, and no query or fragment")
		}
		cs.serviceURL = strings.TrimRight(ep, "/")
		return cs, nil
	}
	if account == "" {
		return fail("no AccountName")
	}
	proto := "https"
	if p, ok := settings["defaultendpointsprotocol"]; ok {
		proto = strings.ToLower(p)
	}
	if proto != "https" && proto != "http" {
		return fail("DefaultEndpointsProtocol is neither https nor http")
	}
	suffix := "core.windows.net"
	if s, ok := settings["endpointsuffix"]; ok {
		suffix = strings.Trim(s, ".")
	}
	if !accountName.MatchString(account) {
		return fail("AccountName cannot be part of a host name; give TableEndpoint")
	}
	cs.serviceURL = proto + "://" + account + ".table." + suffix
	if u, perr := url.Parse(cs.serviceURL); perr != nil || u.Host != account+".table."+suffix || suffix == "" {
		return fail("EndpointSuffix does not make a host name")
	}
	return cs, nil
}
