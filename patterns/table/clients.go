package table

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/retry"
)

// ClientOptions returns aztables client options that use retry.Default in
// place of azcore's built-in retry, and TracingProvider for spans of the
// requests made under a recording span: what tablekit's constructors use
// when given nil options. Adjust the result, or install another policy
// with retry.Policy.ApplyTo.
func ClientOptions() *aztables.ClientOptions {
	o := &aztables.ClientOptions{}
	retry.Default.ApplyTo(&o.ClientOptions)
	o.TracingProvider = TracingProvider()
	return o
}

// NewServiceClientFromConnectionString builds a table service client from
// a connection string (Azure Storage, Cosmos DB Table API, or an emulator
// with explicit endpoints). With nil opts it uses ClientOptions(): the
// guide's retry policy instead of azcore's. Options you pass are used as
// they are.
func NewServiceClientFromConnectionString(connStr string, opts *aztables.ClientOptions) (*aztables.ServiceClient, error) {
	if opts == nil {
		opts = ClientOptions()
	}
	return aztables.NewServiceClientFromConnectionString(connStr, opts)
}

// NewServiceClient builds a table service client for serviceURL that
// authenticates with cred (Microsoft Entra ID, from azidentity). With nil
// opts it uses ClientOptions().
func NewServiceClient(serviceURL string, cred azcore.TokenCredential, opts *aztables.ClientOptions) (*aztables.ServiceClient, error) {
	if opts == nil {
		opts = ClientOptions()
	}
	return aztables.NewServiceClient(serviceURL, cred, opts)
}

// NewClientFromSASURL builds a client for one table from a SAS URL (see
// SASURL). With nil opts it uses ClientOptions().
func NewClientFromSASURL(sasURL string, opts *aztables.ClientOptions) (*aztables.Client, error) {
	if opts == nil {
		opts = ClientOptions()
	}
	return aztables.NewClientWithNoCredential(sasURL, opts)
}

// ErrInvalidConnectionString: a connection string ParseConnectionString
// cannot turn into a table service URL and a shared key: a malformed
// setting, no AccountName or AccountKey (a SAS-only connection string), a
// key that is not base64, an endpoint that is not an http(s) URL.
var ErrInvalidConnectionString error = &invalidKind{"invalid connection string"}

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
// errors.Is(err, ErrInvalidConnectionString). They name settings, never
// their values, so they never contain the key or a signature.
func ParseConnectionString(connStr string) (serviceURL string, cred *aztables.SharedKeyCredential, err error) {
	fail := func(format string, args ...any) (string, *aztables.SharedKeyCredential, error) {
		return "", nil, &Error{Op: "connection string", Err: marked{ErrInvalidConnectionString, fmt.Errorf(format, args...)}}
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
	if key == "" {
		if settings["sharedaccesssignature"] != "" {
			return fail("it has a SharedAccessSignature and no AccountKey; a SAS cannot sign, so use its token with NewClientFromSASURL")
		}
		return fail("no AccountKey")
	}
	if account == "" {
		return fail("no AccountName")
	}
	// Not the SDK's error: its text is its own business, and must not
	// come to include the key.
	cred, kerr := aztables.NewSharedKeyCredential(account, key)
	if kerr != nil {
		return fail("AccountKey is not valid base64")
	}
	if ep := settings["tableendpoint"]; ep != "" {
		u, perr := url.Parse(ep)
		if perr != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
			return fail("TableEndpoint is not an http or https URL with a host")
		}
		return strings.TrimRight(ep, "/"), cred, nil
	}
	proto := "https"
	if p, ok := settings["defaultendpointsprotocol"]; ok {
		proto = strings.ToLower(p)
	}
	if proto != "https" && proto != "http" {
		return fail("DefaultEndpointsProtocol %q: want https or http", proto)
	}
	suffix := "core.windows.net"
	if s, ok := settings["endpointsuffix"]; ok {
		suffix = strings.Trim(s, ".")
	}
	if !accountName.MatchString(account) {
		return fail("AccountName %q cannot be part of a host name; give TableEndpoint", account)
	}
	serviceURL = proto + "://" + account + ".table." + suffix
	if u, perr := url.Parse(serviceURL); perr != nil || u.Host != account+".table."+suffix || suffix == "" {
		return fail("EndpointSuffix %q does not make a host name", suffix)
	}
	return serviceURL, cred, nil
}
