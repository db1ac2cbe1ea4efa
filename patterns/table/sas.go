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

// SASOptions describes a table shared access signature.
type SASOptions struct {
	// Permissions granted: any of Read, Add, Update, Delete. Required. Its
	// StartPartitionKey, StartRowKey, EndPartitionKey and EndRowKey fields
	// are honoured as the key range, like the fields below.
	Permissions aztables.SASPermissions
	// Start is when the SAS becomes valid. Default (zero): immediately.
	Start time.Time
	// Expiry is when the SAS stops being valid. Required.
	Expiry time.Time
	// StartPartitionKey, StartRowKey, EndPartitionKey and EndRowKey limit
	// the SAS to a key range (inclusive bounds). A RowKey bound needs the
	// PartitionKey bound beside it. Each may be set here or in the fields
	// of the same name in Permissions; setting one in both places with
	// different values is an error. Default: the whole table.
	StartPartitionKey, StartRowKey, EndPartitionKey, EndRowKey string
	// AllowHTTP lets the SAS be used over plain HTTP (for an emulator).
	// Default (false): HTTPS only.
	AllowHTTP bool
}

// SASURL returns the URL of a table SAS for table name in the account at
// serviceURL (such as https://myaccount.table.core.windows.net), signed
// with cred. Mint it where the account key is safe and hand the URL to a
// client, which uses it with aztables.NewClientWithNoCredential.
//
// Unlike aztables' own SAS helpers, the key range reaches the URL (the SDK
// signs spk/srk/epk/erk but drops them, so its ranged SAS are rejected), and
// the URL is built correctly whether or not serviceURL ends in a slash.
func SASURL(serviceURL string, cred *aztables.SharedKeyCredential, name string, o SASOptions) (string, error) {
	o, err := o.withRange()
	if err != nil {
		return "", &Error{Op: "sas", Table: name, Err: err}
	}
	if err := o.validate(name); err != nil {
		return "", &Error{Op: "sas", Table: name, Err: err}
	}
	u, err := url.Parse(serviceURL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", &Error{Op: "sas", Table: name, Err: fmt.Errorf("invalid service URL %q", serviceURL)}
	}
	if u.Scheme != "https" && !o.AllowHTTP {
		return "", &Error{Op: "sas", Table: name, Err: fmt.Errorf("service URL %q is not https; set AllowHTTP for an emulator", serviceURL)}
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
		return "", &Error{Op: "sas", Table: name, Err: err}
	}
	q, err := url.ParseQuery(qs)
	if err != nil {
		return "", &Error{Op: "sas", Table: name, Err: err}
	}
	for k, val := range map[string]string{"spk": o.StartPartitionKey, "srk": o.StartRowKey, "epk": o.EndPartitionKey, "erk": o.EndRowKey} {
		if val != "" {
			q.Set(k, val)
		}
	}
	return strings.TrimSuffix(serviceURL, "/") + "/" + name + "?" + q.Encode(), nil
}

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

func (o SASOptions) validate(name string) error {
	if err := ValidTableName(name); err != nil {
		return err
	}
	if o.Permissions.String() == "" {
		return errors.New("no permissions: set at least one of Read, Add, Update, Delete")
	}
	if o.Expiry.IsZero() {
		return errors.New("no expiry")
	}
	if !o.Start.IsZero() && !o.Expiry.After(o.Start) {
		return fmt.Errorf("expiry %v is not after start %v", o.Expiry, o.Start)
	}
	if (o.StartRowKey != "" && o.StartPartitionKey == "") || (o.EndRowKey != "" && o.EndPartitionKey == "") {
		return errors.New("a RowKey bound needs the PartitionKey bound beside it")
	}
	for _, k := range []string{o.StartPartitionKey, o.StartRowKey, o.EndPartitionKey, o.EndRowKey} {
		if err := keys.Validate(k); err != nil {
			return err
		}
	}
	return nil
}
