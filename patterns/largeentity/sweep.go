package largeentity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/tablekit/tablekit/internal/reserved"

	"github.com/tablekit/tablekit/internal/fieldmodel"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/tablekit/tablekit/internal/prefetch"
	"github.com/tablekit/tablekit/internal/redact"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/retry"
)

// The metadata of every blob a Store writes: the entity's keys (base64url,
// since metadata is ASCII) and the property, so that Sweep can find the
// entity that may point at the blob.
const (
	metaPK       = "pk"
	metaRK       = "rk"
	metaProperty = "property"
)

// metadata is the metadata of the blob of a value of property prop of
// entity (pk, rk).
func metadata(pk, rk, prop string) map[string]*string {
	return map[string]*string{metaPK: ptr(encodeKey(pk)), metaRK: ptr(encodeKey(rk)), metaProperty: ptr(prop)}
}

// Swept reports what a Sweep found and did.
type Swept struct {
	// Listed is the number of blobs under Prefix.
	Listed int
	// Old is how many of them were older than Grace: the candidates.
	Old int
	// Entities is the number of entities read to tell referenced blobs
	// from orphans (one per entity with old blobs).
	Entities int
	// Deleted is the number of orphans deleted.
	Deleted int
	// Skipped counts blobs under Prefix that do not name their entity as
	// this package's blobs do (other code's): Sweep never deletes them.
	Skipped int
}

// sweepGroup is the old blobs of one entity.
type sweepGroup struct {
	pk, rk string
	blobs  []listed
}

type listed struct{ name, property string }

// Sweep deletes the blobs under Prefix that no entity points at and that
// are older than Grace (so a write in progress, which sends its entity
// within Grace/2 of its uploads, never loses its blobs): the blobs of
// versions replaced by Update or Modify, and those a crash or an
// undecided write left. It is safe to run at any time, concurrently with
// writes and with other Sweeps.
//
// Cost: one listing request per 5,000 blobs (with their metadata, which
// names each blob's entity), one point query per entity that has blobs
// older than Grace (projected on its pointers; Concurrency at a time), and
// one delete per orphan. So it scales with the number of blobs: in a
// table where most large entities are older than Grace it reads about one
// entity per large entity. Run it rarely (daily, say), or spread it with
// several Stores over disjoint Prefixes.
func (s *Store[T]) Sweep(ctx context.Context) (res Swept, err error) {
	ctx, sp := s.obs.Start(ctx, opSweep, s.tbl.Name(), "")
	defer func() { sp.EndWrite(err, false) }()
	cutoff := s.now().Add(-s.grace)
	groups := func(yield func(sweepGroup, error) bool) {
		var g sweepGroup
		flush := func() bool {
			ok := len(g.blobs) == 0 || yield(g, nil)
			g = sweepGroup{}
			return ok
		}
		pager := s.blobs.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: ptr(s.prefix + "/"), Include: container.ListBlobsInclude{Metadata: true}})
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				yield(sweepGroup{}, fmt.Errorf("largeentity: sweep: listing %s/: %w", s.prefix, redact.Error(err)))
				return
			}
			for _, item := range page.Segment.BlobItems {
				res.Listed++
				pk, rk, prop, ok := s.owner(item)
				if !ok {
					res.Skipped++
					continue
				}
				if item.Properties.LastModified.After(cutoff) {
					continue
				}
				res.Old++
				if pk != g.pk || rk != g.rk {
					if !flush() {
						return
					}
					g.pk, g.rk = pk, rk
				}
				g.blobs = append(g.blobs, listed{name: *item.Name, property: prop})
			}
		}
		flush()
	}
	var ferr error
	for deleted, err := range prefetch.Map(ctx, iter.Seq2[sweepGroup, error](groups), s.conc, s.sweepGroup) {
		if err != nil {
			ferr = err
			break // (not return: res is read once the listing has stopped)
		}
		res.Entities++
		res.Deleted += deleted
	}
	return res, ferr
}

// owner returns the entity and property a listed blob belongs to, from its
// metadata, if its name is the one this Store gives such a blob.
func (s *Store[T]) owner(item *container.BlobItem) (pk, rk, prop string, ok bool) {
	if item.Name == nil || item.Properties == nil || item.Properties.LastModified == nil {
		return "", "", "", false
	}
	get := func(key string) string {
		for k, v := range item.Metadata {
			if strings.EqualFold(k, key) && v != nil {
				return *v
			}
		}
		return ""
	}
	pk, ok1 := decodeKey(get(metaPK))
	rk, ok2 := decodeKey(get(metaRK))
	prop = get(metaProperty)
	parts := strings.Split(strings.TrimPrefix(*item.Name, s.prefix+"/"), "/")
	if !ok1 || !ok2 || pk == "" || len(parts) != 3 || parts[0] != keyHash(pk, rk) || parts[1] != prop || len(parts[2]) != 32 {
		return "", "", "", false
	}
	// Anyone can compute a name's hash: metadata naming keys no entity of
	// this Store can have (reserved or invalid ones) or a property no
	// pointer can name is not this Store's, and must not stop the sweep.
	if fieldmodel.CheckKeys(pk, rk) != nil || fieldmodel.ValidName(prop) != nil {
		return "", "", "", false
	}
	return pk, rk, prop, true
}

// sweepGroup reads the entity of g (projected on the pointers of g's
// properties) and deletes g's blobs it does not point at. Every write
// that makes an entity point at an existing blob is conditioned on a
// version that already points at it, so a blob unreferenced now stays
// unreferenced.
func (s *Store[T]) sweepGroup(ctx context.Context, g sweepGroup) (int, error) {
	var sel []string
	for _, b := range g.blobs {
		if p := pointerProperty(b.property); !slices.Contains(sel, p) {
			sel = append(sel, p)
		}
	}
	got, err := s.tbl.Get(ctx, g.pk, g.rk, &table.GetOptions{Select: sel})
	if err != nil && (!errors.Is(err, table.ErrNotFound) || errors.Is(err, table.ErrOutcomeUnknown)) {
		return 0, fmt.Errorf("largeentity: sweep: reading (%q, %q): %w", g.pk, g.rk, err)
	}
	// Any blob a pointer names is kept, even one a read would refuse:
	// keeping is always safe, and g's blobs are all this entity's (their
	// names derive from its keys), so no pointer, whoever wrote it, can
	// make Sweep delete another entity's blob.
	referenced := map[string]bool{}
	for name, val := range got.Value.Properties {
		if _, ok := strings.CutPrefix(name, reserved.BlobPointerPrefix); ok {
			var b Blob
			if str, _ := val.(string); json.Unmarshal([]byte(str), &b) == nil {
				referenced[b.Name] = true
			}
		}
	}
	deleted := 0
	for _, b := range g.blobs {
		if referenced[b.name] {
			continue
		}
		_, err := s.blobs.NewBlobClient(b.name).Delete(ctx, nil)
		switch {
		case err == nil, errors.Is(err, retry.ErrOutcomeUnknown) && bloberror.HasCode(err, bloberror.BlobNotFound):
			deleted++ // a resend after a lost response finds it gone
		case bloberror.HasCode(err, bloberror.BlobNotFound):
			// another Sweep, or a Delete, came first
		default:
			return deleted, fmt.Errorf("largeentity: sweep: deleting blob %s: %w", b.name, redact.Error(err))
		}
	}
	return deleted, nil
}
