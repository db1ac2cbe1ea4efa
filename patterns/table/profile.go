package table

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
)

// Profile is what a table service allows and how it answers, where Azure
// Table Storage and the Cosmos DB Table API differ: the one place that
// holds the limits the core and the pattern packages check before the
// network, and the behaviours (result order, Timestamp filters, stored
// access policies) that decide how a pattern reads. A Table takes its
// profile from its client's endpoint (ProfileFor) unless Options.Profile sets
// one. Profiles are read-only values; use Storage and Cosmos.
type Profile struct {
	// Name names the service in errors ("Azure Table Storage").
	Name string
	// Sorted reports that a query returns its entities in PartitionKey,
	// then RowKey order, across pages, and that a page of at most n
	// entities holds the first n in that order. False on Cosmos DB, whose
	// Table API returns matches in no defined order.
	Sorted bool
	// MaxBatchOps and MaxBatchSize bound one entity group transaction:
	// operations, and bytes of the request body.
	MaxBatchOps, MaxBatchSize int
	// MaxEntitySize bounds an entity's property data with strings counted
	// as UTF-16 (Table Storage's measure), MaxEntityJSON its JSON in bytes
	// (Cosmos DB's); 0 is no bound.
	MaxEntitySize, MaxEntityJSON int
	// MaxValueSize is the largest string (in UTF-16 bytes) or binary
	// value; MaxProperties the most properties an entity has besides
	// PartitionKey, RowKey and Timestamp.
	MaxValueSize, MaxProperties int
	// MaxKeyBytes bounds PartitionKey and RowKey in UTF-8 bytes, 0 for no
	// bound beyond keys.MaxKeyLength characters (Cosmos DB: RowKey at most
	// 255 bytes).
	MaxPartitionKeyBytes, MaxRowKeyBytes int
	// ReservedNames are property names the service keeps, compared
	// without regard to case (Cosmos DB: id, rid, etag, resourceid).
	ReservedNames []string
	// TimestampFilters reports that a filter on Timestamp works. Cosmos
	// DB answers such a filter with no rows and no error: the core refuses
	// it (ErrUnsupported).
	TimestampFilters bool
	// AccessPolicies reports that stored access policies
	// (SetAccessPolicy, GetAccessPolicy, SASOptions.Identifier) exist.
	AccessPolicies bool
}

// Storage is Azure Table Storage (and Azurite): results in key order,
// transactions of 100 operations and 4 MiB, entities of 1 MiB counted as
// UTF-16, 252 properties of at most 64 KiB, keys of 1,024 characters.
var Storage = &Profile{
	Name: "Azure Table Storage", Sorted: true,
	MaxBatchOps: 100, MaxBatchSize: 4 << 20,
	MaxEntitySize: 1 << 20, MaxValueSize: 64 << 10, MaxProperties: 252,
	TimestampFilters: true, AccessPolicies: true,
}

// Cosmos is the Cosmos DB Table API: results in no defined order (a
// query's first page of n is some n matches, not the first n by key),
// transactions of at most 2 MB, entities of 2 MB of JSON, RowKeys of 255
// bytes, the property names id, rid, etag and resourceid reserved,
// Timestamp filters that match nothing, no stored access policies. The
// limits it leaves unstated (100 operations per transaction, 252
// properties, 64 KiB values) are kept at Table Storage's, the stricter
// reading. See shared/reference/cosmos-table-api.md for the sources.
var Cosmos = &Profile{
	Name: "Cosmos DB Table API", Sorted: false,
	MaxBatchOps: 100, MaxBatchSize: 2 << 20,
	MaxEntityJSON: 2 << 20, MaxValueSize: 64 << 10, MaxProperties: 252,
	MaxPartitionKeyBytes: 1 << 10, MaxRowKeyBytes: 255,
	ReservedNames: []string{"id", "rid", "etag", "resourceid"},
}

// ErrUnsupported: the operation cannot be done correctly on the table's
// service (its Profile), at a sane cost: a query whose meaning needs key
// order on Cosmos DB, a Timestamp filter, a stored access policy. Nothing
// was sent. The error names the profile and the operation.
var ErrUnsupported = errors.New("not supported by the table service")

// unsupported reports op as not supported by p.
func (p *Profile) unsupported(op, why string) error {
	return fmt.Errorf("%w: %s on %s: %s", ErrUnsupported, op, p.Name, why)
}

// ProfileFor returns the profile of the service at endpoint (a service or
// table URL): Cosmos for the Cosmos DB Table API's hosts
// (<account>.table.cosmos.azure.com, the older .table.cosmosdb.azure.com,
// those of the sovereign clouds, and the emulator's localhost:8902),
// Storage for everything else. A proxy or custom domain in front of Cosmos
// DB is not recognised: set the profile with Options.Profile (or Describe).
func ProfileFor(endpoint string) *Profile {
	u, err := url.Parse(endpoint)
	if err != nil {
		return Storage
	}
	host := strings.ToLower(u.Hostname())
	switch {
	case strings.Contains(host, ".table.cosmos.") || strings.Contains(host, ".table.cosmosdb."):
		return Cosmos
	case (host == "localhost" || host == "127.0.0.1") && u.Port() == "8902":
		return Cosmos
	}
	return Storage
}

// profileOf returns the profile c is known to have (Portable when tablekit
// does not know c: see Describe).
func profileOf(c *aztables.Client) *Profile { return aboutClient(c).resolvedProfile() }

// Profile returns the profile whose limits and behaviours t follows.
func (t *Table[T]) Profile() *Profile { return t.profile }

// checkKeys checks the keys' lengths against p (validKeys checks the
// rest).
func (p *Profile) checkKeys(pk, rk string) error {
	for _, k := range [2]struct {
		name, v string
		max     int
	}{{"PartitionKey", pk, p.MaxPartitionKeyBytes}, {"RowKey", rk, p.MaxRowKeyBytes}} {
		if k.max > 0 && len(k.v) > k.max {
			return refused("encode", pk, rk, ErrInvalidKey, "%s is %d bytes, more than %s allows (%d)", k.name, len(k.v), p.Name, k.max)
		}
	}
	return nil
}

// checkName refuses a property name p's service keeps.
func (p *Profile) checkName(name string) error {
	for _, r := range p.ReservedNames {
		if strings.EqualFold(name, r) {
			return fmt.Errorf("%w: property name %q is reserved by %s", ErrInvalidEntity, name, p.Name)
		}
	}
	return nil
}

// Portable is the stricter of Storage and Cosmos in every limit: data
// written within it fits both services (Options.Profile: Portable). Its reads
// assume no order, as on Cosmos DB.
var Portable = &Profile{
	Name: "Azure Table Storage and Cosmos DB Table API", Sorted: false,
	MaxBatchOps: 100, MaxBatchSize: 2 << 20,
	MaxEntitySize: 1 << 20, MaxEntityJSON: 2 << 20, MaxValueSize: 64 << 10, MaxProperties: 252,
	MaxPartitionKeyBytes: 1 << 10, MaxRowKeyBytes: 255,
	ReservedNames: []string{"id", "rid", "etag", "resourceid"},
}
