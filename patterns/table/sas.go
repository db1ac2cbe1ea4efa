package table

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tablekit/tablekit/internal/invalid"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/keys"
)

// errInvalidSAS matches ErrInvalid: SAS options, or a service URL, from which SASURL cannot
// make a usable shared access signature (no permissions or expiry, an
// expiry in the past or not after the start, an inverted key range, a
// service URL that is not an http(s) URL or already carries a SAS), or
// stored access policies the service would reject (more than 5, an ID
// that is empty, too long or repeated). Errors for a bad table name or key
// also satisfy ErrInvalidEntity or ErrInvalidKey.
var errInvalidSAS error = invalid.New("invalid shared access signature")

// SASOptions describes a table shared access signature. It is a plain
// value: SASURL does not keep or modify it.
type SASOptions struct {
	// Identifier names a stored access policy of the table (see
	// SetAccessPolicy) that the SAS is bound to: its "si" parameter.
	// Removing the policy, or giving it an expiry in the past, revokes
	// every SAS bound to it; changing it changes them all. Permissions,
	// Start and Expiry may then be left empty for the policy to supply;
	// the service rejects (400) a SAS that sets one the policy also sets.
	// 1 to 64 characters. Default: no policy.
	Identifier string
	// Permissions granted: any of Read, Add, Update, Delete. Required
	// unless Identifier is set. Its StartPartitionKey, StartRowKey,
	// EndPartitionKey and EndRowKey fields are honoured as the key range,
	// like the fields below.
	Permissions aztables.SASPermissions
	// Start is when the SAS becomes valid. Default (zero): immediately,
	// or the policy's start. Signed to the second, in UTC.
	Start time.Time
	// Expiry is when the SAS stops being valid. Required unless
	// Identifier is set. When set, it must be after Start and in the
	// future: an expiry that has passed (to the second, as signed) is an
	// error, with no allowance for clock skew.
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
// hand the URL to a client, which uses it with NewClientFromSASURL. It is
// computed locally (no round trip) and is safe for concurrent use.
//
// serviceURL is the table service endpoint, such as
// https://myaccount.table.core.windows.net, or one with a path for an
// emulator, such as http://127.0.0.1:10002/devstoreaccount1.
// ParseConnectionString returns it, and cred, from a connection string. The
// table name is appended to its path, whether or not it ends in a slash. A
// query string on serviceURL is kept, parameters and values, unless it
// already holds SAS parameters (sv, sig, se, ...): then SASURL fails rather
// than return a URL with two signatures in it.
//
// Unlike aztables' own SAS helpers, the key range reaches the URL (the SDK
// signs spk/srk/epk/erk but drops them, so its ranged SAS are rejected), and
// the URL is built correctly whatever the shape of serviceURL.
//
// Errors are *Error with Op "sas" that satisfy errors.Is(err,
// ErrInvalid); they never contain the account key or a signature.
func SASURL(serviceURL string, cred *aztables.SharedKeyCredential, name string, o SASOptions) (string, error) {
	fail := func(err error) (string, error) {
		return "", &Error{Op: "sas", Table: name, Err: invalidSAS(err)}
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
		Identifier:        o.Identifier,
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

// invalidSAS marks err as ErrInvalid.
func invalidSAS(err error) error { return invalid.Marked(errInvalidSAS, err) }

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
	if err := validTableName(name); err != nil {
		return err
	}
	if o.Identifier != "" {
		if err := validPolicyID(o.Identifier); err != nil {
			return err
		}
	} else {
		if o.Permissions.String() == "" {
			return errors.New("no permissions: set at least one of Read, Add, Update, Delete, or an Identifier whose policy has them")
		}
		if o.Expiry.IsZero() {
			return errors.New("no expiry: set one, or an Identifier whose policy has one")
		}
	}
	if !o.Expiry.IsZero() {
		if expiry := signedTime(o.Expiry); !expiry.After(now) {
			return fmt.Errorf("expiry %s is not in the future (now %s; SAS times are whole seconds)", expiry.Format(sasTime), now.UTC().Format(sasTime))
		}
	}
	if err := checkWindow(o.Start, o.Expiry); err != nil {
		return err
	}
	return o.validateRange()
}

// checkWindow reports an expiry that is not after the start, when both are
// set, compared as signed.
func checkWindow(start, expiry time.Time) error {
	if start.IsZero() || expiry.IsZero() {
		return nil
	}
	if s, e := signedTime(start), signedTime(expiry); !e.After(s) {
		return fmt.Errorf("expiry %s is not after start %s (both signed to the second)", e.Format(sasTime), s.Format(sasTime))
	}
	return nil
}

// maxPolicyID and maxPolicies are the service's limits on stored access
// policies: IDs up to 64 characters, at most 5 policies per table.
const (
	maxPolicyID = 64
	maxPolicies = 5
)

func validPolicyID(id string) error {
	switch n := utf8.RuneCountInString(id); {
	case n == 0:
		return errors.New("empty access policy ID")
	case !utf8.ValidString(id):
		return fmt.Errorf("access policy ID %q is not valid UTF-8", id)
	case n > maxPolicyID:
		return fmt.Errorf("access policy ID %q is %d characters, more than the service's %d", id, n, maxPolicyID)
	}
	return nil
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

// AccessPolicy is a stored access policy on a table: permissions and a
// validity window that the service keeps under an ID, and that a SAS names
// (SASOptions.Identifier) instead of carrying them itself. Changing or
// removing the policy changes or revokes every SAS that names it, without
// changing the account key.
type AccessPolicy struct {
	// ID names the policy: 1 to 64 characters, unique among the table's
	// policies. Required.
	ID string
	// Permissions granted to a SAS bound to the policy. Its key range
	// fields must be empty: a key range can only be set in the SAS.
	// Default (none): each SAS carries its own.
	Permissions aztables.SASPermissions
	// Start is when SAS bound to the policy become valid. Default (zero):
	// each SAS carries its own, or is valid immediately. Sent to the
	// second, in UTC.
	Start time.Time
	// Expiry is when SAS bound to the policy stop being valid. Default
	// (zero): each SAS carries its own. It may be in the past: that
	// disables every SAS bound to the policy and keeps the ID. Sent to the
	// second, in UTC.
	Expiry time.Time
}

// SetAccessPolicy replaces the stored access policies of the table c talks
// to with policies (at most 5); with none, it removes them all, revoking
// every SAS bound to one. One round trip. The policies are checked first:
// more than 5, an empty, repeated or over-long ID, a key range in
// Permissions, or an expiry not after the start fail with ErrInvalid
// before the network. To add or change one policy, read the others with
// GetAccessPolicy and pass them all. Safe for concurrent use, but two
// concurrent read-modify-write sequences can lose a change: the last
// replacement wins.
//
// The service may take up to 30 seconds to apply a change: until then, a
// SAS bound to a new policy can fail with 403 and one bound to a removed
// policy can still work. Azurite (3.37) applies changes at once, but
// rejects (400, no error code) a policy that lacks any of Permissions,
// Start or Expiry, which the service allows.
func SetAccessPolicy(ctx context.Context, c *aztables.Client, policies ...AccessPolicy) error {
	const op = "set access policy"
	if c == nil {
		return &Error{Op: op, Err: errors.New("nil *aztables.Client")}
	}
	if p := profileOf(c); !p.AccessPolicies {
		return &Error{Op: op, Table: aboutClient(c).name, Err: p.unsupported(op, "it has no stored access policies")}
	}
	if len(policies) > maxPolicies {
		return &Error{Op: op, Err: invalidSAS(fmt.Errorf("%d access policies; a table can have at most %d", len(policies), maxPolicies))}
	}
	var acl []*aztables.SignedIdentifier
	seen := make(map[string]bool, len(policies))
	for _, p := range policies {
		if err := p.validate(seen); err != nil {
			return &Error{Op: op, Err: invalidSAS(err)}
		}
		ap := &aztables.AccessPolicy{}
		if perms := p.Permissions.String(); perms != "" {
			ap.Permission = &perms
		}
		if !p.Start.IsZero() {
			t := signedTime(p.Start)
			ap.Start = &t
		}
		if !p.Expiry.IsZero() {
			t := signedTime(p.Expiry)
			ap.Expiry = &t
		}
		id := p.ID
		acl = append(acl, &aztables.SignedIdentifier{ID: &id, AccessPolicy: ap})
	}
	_, err := c.SetAccessPolicy(ctx, &aztables.SetAccessPolicyOptions{TableACL: acl})
	return wrap(op, aboutClient(c).name, "", "", err)
}

func (p AccessPolicy) validate(seen map[string]bool) error {
	if err := validPolicyID(p.ID); err != nil {
		return err
	}
	if seen[p.ID] {
		return fmt.Errorf("access policy ID %q appears twice", p.ID)
	}
	seen[p.ID] = true
	if r := p.Permissions; r.StartPartitionKey != "" || r.StartRowKey != "" || r.EndPartitionKey != "" || r.EndRowKey != "" {
		return fmt.Errorf("access policy %q has a key range in Permissions; the service keeps key ranges only in the SAS", p.ID)
	}
	if err := checkWindow(p.Start, p.Expiry); err != nil {
		return fmt.Errorf("access policy %q: %w", p.ID, err)
	}
	return nil
}

// GetAccessPolicy returns the stored access policies of the table c talks
// to, in the service's order, with times in UTC. One round trip; safe for
// concurrent use.
func GetAccessPolicy(ctx context.Context, c *aztables.Client) ([]AccessPolicy, error) {
	const op = "get access policy"
	if c == nil {
		return nil, &Error{Op: op, Err: errors.New("nil *aztables.Client")}
	}
	if p := profileOf(c); !p.AccessPolicies {
		return nil, &Error{Op: op, Table: aboutClient(c).name, Err: p.unsupported(op, "it has no stored access policies")}
	}
	resp, err := c.GetAccessPolicy(ctx, nil)
	if err != nil {
		return nil, wrap(op, aboutClient(c).name, "", "", err)
	}
	var out []AccessPolicy
	for _, si := range resp.SignedIdentifiers {
		if si == nil || si.ID == nil {
			continue
		}
		p := AccessPolicy{ID: *si.ID}
		if ap := si.AccessPolicy; ap != nil {
			if ap.Permission != nil {
				if err := p.Permissions.Parse(*ap.Permission); err != nil {
					return nil, &Error{Op: op, Err: fmt.Errorf("access policy %q: %w", p.ID, err)}
				}
			}
			if ap.Start != nil {
				p.Start = ap.Start.UTC()
			}
			if ap.Expiry != nil {
				p.Expiry = ap.Expiry.UTC()
			}
		}
		out = append(out, p)
	}
	return out, nil
}
