package table

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/keys"
)

// ErrInvalidSAS: SAS options, or a service URL, from which SASURL cannot
// make a usable shared access signature: no permissions or expiry, an
// expiry in the past or not after the start, an inverted key range, a
// service URL that is not an http(s) URL or already carries a SAS. Errors
// for a bad table name or key also satisfy ErrInvalidEntity or
// ErrInvalidKey.
var ErrInvalidSAS = errors.New("invalid shared access signature")

// SASOptions describes a table shared access signature.
type SASOptions struct {
	// Permissions granted: any of Read, Add, Update, Delete. Required. Its
	// StartPartitionKey, StartRowKey, EndPartitionKey and EndRowKey fields
	// are honoured as the key range, like the fields below.
	Permissions aztables.SASPermissions
	// Start is when the SAS becomes valid. Default (zero): immediately.
	// Signed to the second, in UTC.
	Start time.Time
	// Expiry is when the SAS stops being valid. Required, after Start,
	// and in the future: an expiry that has passed (to the second, as
	// signed) is an error, with no allowance for clock skew.
	Expiry time.Time
	// StartPartitionKey, StartRowKey, EndPartitionKey and EndRowKey limit
	// the SAS to a key range (inclusive bounds). A RowKey bound needs the
	// PartitionKey bound beside it, and the start must not sort after the
	// end in the service's order (keys.Compare). Each may be set here or
	// in the fields of the same name in Permissions; setting one in both
	// places with different values is an error. Default: the whole table.
	StartPartitionKey, StartRowKey, EndPartitionKey, EndRowKey string
	// AllowHTTP lets the SAS be used over plain HTTP (for an emulator).
	// Default (false): HTTPS only.
	AllowHTTP bool
}

// SASURL returns the URL of a table SAS for table name in the account at
// serviceURL, signed with cred. Mint it where the account key is safe and
// hand the URL to a client, which uses it with
// aztables.NewClientWithNoCredential. It is computed locally (no round
// trip) and is safe for concurrent use.
//
// serviceURL is the table service endpoint, such as
// https://myaccount.table.core.windows.net, or one with a path for an
// emulator, such as http://127.0.0.1:10002/devstoreaccount1. The table name
// is appended to its path, whether or not it ends in a slash. A query
// string on serviceURL is kept, parameters and values, unless it already
// holds SAS parameters (sv, sig, se, ...): then SASURL fails rather than
// return a URL with two signatures in it.
//
// Unlike aztables' own SAS helpers, the key range reaches the URL (the SDK
// signs spk/srk/epk/erk but drops them, so its ranged SAS are rejected), and
// the URL is built correctly whatever the shape of serviceURL.
//
// Errors are *Error with Op "sas" that satisfy errors.Is(err,
// ErrInvalidSAS); they never contain the account key or a signature.
func SASURL(serviceURL string, cred *aztables.SharedKeyCredential, name string, o SASOptions) (string, error) {
	fail := func(err error) (string, error) {
		return "", &Error{Op: "sas", Table: name, Err: invalidSAS{err}}
	}
	if cred == nil {
		return fail(errors.New("nil credential"))
	}
	o, err := o.withRange()
	if err != nil {
		return fail(err)
	}
	if err := o.validate(name, time.Now()); err != nil {
		return fail(err)
	}
	u, err := sasBase(serviceURL, name, o.AllowHTTP)
	if err != nil {
		return fail(err)
	}
	proto := aztables.SASProtocolHTTPS
	if o.AllowHTTP {
		proto = aztables.SASProtocolHTTPSandHTTP
	}
	v := aztables.SASSignatureValues{
		Protocol: proto, StartTime: o.Start.UTC(), ExpiryTime: o.Expiry.UTC(), Permissions: o.Permissions.String(), TableName: name,
		StartPartitionKey: o.StartPartitionKey, StartRowKey: o.StartRowKey, EndPartitionKey: o.EndPartitionKey, EndRowKey: o.EndRowKey,
	}
	qs, err := v.Sign(cred)
	if err != nil {
		return fail(err)
	}
	sas, err := url.ParseQuery(qs)
	if err != nil {
		return fail(err)
	}
	for k, val := range map[string]string{"spk": o.StartPartitionKey, "srk": o.StartRowKey, "epk": o.EndPartitionKey, "erk": o.EndRowKey} {
		if val != "" {
			sas.Set(k, val)
		}
	}
	q, _ := url.ParseQuery(u.RawQuery) // checked by sasBase
	for k, vals := range sas {
		q[k] = vals
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// invalidSAS marks an error as ErrInvalidSAS, keeping its text and what it
// wraps (ErrInvalidEntity, ErrInvalidKey).
type invalidSAS struct{ err error }

func (e invalidSAS) Error() string        { return e.err.Error() }
func (e invalidSAS) Unwrap() error        { return e.err }
func (e invalidSAS) Is(target error) bool { return target == ErrInvalidSAS }

// withRange returns o with the key range of o.Permissions merged into o's
// own range fields, and o.Permissions holding only the permissions.
func (o SASOptions) withRange() (SASOptions, error) {
	p := &o.Permissions
	for _, f := range []struct {
		name       string
		own, other *string
	}{
		{"StartPartitionKey", &o.StartPartitionKey, &p.StartPartitionKey},
		{"StartRowKey", &o.StartRowKey, &p.StartRowKey},
		{"EndPartitionKey", &o.EndPartitionKey, &p.EndPartitionKey},
		{"EndRowKey", &o.EndRowKey, &p.EndRowKey},
	} {
		switch {
		case *f.other == "" || *f.other == *f.own:
		case *f.own == "":
			*f.own = *f.other
		default:
			return o, fmt.Errorf("%s is %q in SASOptions but %q in SASOptions.Permissions: set it in one place", f.name, *f.own, *f.other)
		}
		*f.other = ""
	}
	return o, nil
}

// signedTime is t as a SAS carries it: UTC, to the second.
func signedTime(t time.Time) time.Time { return t.UTC().Truncate(time.Second) }

const sasTime = "2006-01-02T15:04:05Z"

func (o SASOptions) validate(name string, now time.Time) error {
	if err := ValidTableName(name); err != nil {
		return err
	}
	if o.Permissions.String() == "" {
		return errors.New("no permissions: set at least one of Read, Add, Update, Delete")
	}
	if o.Expiry.IsZero() {
		return errors.New("no expiry")
	}
	start, expiry := signedTime(o.Start), signedTime(o.Expiry)
	if !expiry.After(now) {
		return fmt.Errorf("expiry %s is not in the future (now %s)", expiry.Format(sasTime), now.UTC().Format(sasTime))
	}
	if !o.Start.IsZero() && !expiry.After(start) {
		return fmt.Errorf("expiry %s is not after start %s (both signed to the second)", expiry.Format(sasTime), start.Format(sasTime))
	}
	return o.validateRange()
}

func (o SASOptions) validateRange() error {
	if (o.StartRowKey != "" && o.StartPartitionKey == "") || (o.EndRowKey != "" && o.EndPartitionKey == "") {
		return errors.New("a RowKey bound needs the PartitionKey bound beside it")
	}
	for _, k := range []string{o.StartPartitionKey, o.StartRowKey, o.EndPartitionKey, o.EndRowKey} {
		if err := keys.Validate(k); err != nil {
			return err
		}
	}
	if o.StartPartitionKey == "" || o.EndPartitionKey == "" {
		return nil
	}
	switch keys.Compare(o.StartPartitionKey, o.EndPartitionKey) {
	case 1:
		return fmt.Errorf("inverted key range: StartPartitionKey %q sorts after EndPartitionKey %q", o.StartPartitionKey, o.EndPartitionKey)
	case 0:
		if o.StartRowKey != "" && o.EndRowKey != "" && keys.Compare(o.StartRowKey, o.EndRowKey) > 0 {
			return fmt.Errorf("inverted key range: in partition %q, StartRowKey %q sorts after EndRowKey %q", o.StartPartitionKey, o.StartRowKey, o.EndRowKey)
		}
	}
	return nil
}

// sasParams are the query parameters of a SAS (aztables'
// SASQueryParameters).
var sasParams = map[string]bool{
	"sv": true, "ss": true, "srt": true, "spr": true, "st": true, "se": true, "sip": true, "si": true, "sr": true,
	"sp": true, "sig": true, "skv": true, "tn": true, "spk": true, "srk": true, "epk": true, "erk": true,
}

// sasBase checks serviceURL and returns it with the table name appended to
// its path. Its errors never repeat the URL's query, which may hold a
// signature.
func sasBase(serviceURL, name string, allowHTTP bool) (*url.URL, error) {
	u, err := url.Parse(serviceURL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error repeats the whole URL
		}
		return nil, fmt.Errorf("service URL does not parse: %v", err)
	}
	shown := (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String() // no user, query or fragment
	switch {
	case u.Scheme != "https" && u.Scheme != "http":
		return nil, fmt.Errorf("service URL %s: want an https URL (or http with AllowHTTP), such as https://myaccount.table.core.windows.net", shown)
	case u.Host == "":
		return nil, fmt.Errorf("service URL %s has no host", shown)
	case u.User != nil:
		return nil, fmt.Errorf("service URL %s has user information before the host; remove it", shown)
	case u.Fragment != "":
		return nil, fmt.Errorf("service URL %s has a fragment (#...); remove it", shown)
	case u.Scheme == "http" && !allowHTTP:
		return nil, fmt.Errorf("service URL %s is not https; set AllowHTTP for an emulator", shown)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, fmt.Errorf("service URL %s: its query does not parse: %v", shown, err)
	}
	for k := range q {
		if sasParams[strings.ToLower(k)] {
			return nil, fmt.Errorf("service URL %s already has SAS parameter %q in its query; pass the URL without its SAS", shown, k)
		}
	}
	u.Path = strings.TrimRight(u.Path, "/") + "/" + name
	if u.RawPath != "" {
		u.RawPath = strings.TrimRight(u.RawPath, "/") + "/" + name
	}
	return u, nil
}
