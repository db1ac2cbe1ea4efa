package indexentity_test

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

	"github.com/tablekit/tablekit/internal/emulator"
	"github.com/tablekit/tablekit/internal/reserved"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/internal/testrig"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/indexentity"
	"github.com/tablekit/tablekit/patterns/table"
)

// TestKeyErrors: every invalid key matches both ErrInvalid and
// table.ErrInvalidKey, and nothing is sent: keys the service refuses, an
// empty PartitionKey, a value too long for its index key, and keys under
// reserved.Prefix, such as an application RowKey equal to an index
// entity's, which would otherwise be accepted and then overwritten by the
// index entity.
func TestKeyErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	// The index entity of Smith's RowKey: an entity of Jones under it would
	// be written, then overwritten by the first Smith's index entity.
	ixKey := keys.Join(indexentity.KeyPrefix, "LastName", "Smith")
	long := strings.Repeat("j", keys.MaxKeyLength)
	for name, err := range map[string]error{
		"Insert, RowKey with /":            second(f.idx.Insert(ctx, Employee{Department: "Sales", ID: "a/b", LastName: "Jones"})),
		"Insert, empty PartitionKey":       second(f.idx.Insert(ctx, Employee{ID: "1", LastName: "Jones"})),
		"Insert, an index entity's RowKey": second(f.idx.Insert(ctx, Employee{Department: "Sales", ID: ixKey, LastName: "Jones"})),
		"Insert, a reserved PartitionKey":  second(f.idx.Insert(ctx, Employee{Department: reserved.Prefix + "x", ID: "1", LastName: "Jones"})),
		"Insert, value too long":           second(f.idx.Insert(ctx, Employee{Department: "Sales", ID: "1", LastName: long})),
		"Update, an index entity's RowKey": second(f.idx.Update(ctx, Employee{Department: "Sales", ID: ixKey, LastName: "Smith"}, azcore.ETagAny)),
		"Update, RowKey with #":            second(f.idx.Update(ctx, Employee{Department: "Sales", ID: "a#b", LastName: "Smith"}, azcore.ETagAny)),
		"Update, value too long":           second(f.idx.Update(ctx, Employee{Department: "Sales", ID: "1", LastName: long}, azcore.ETagAny)),
		"Delete, an index entity's RowKey": f.idx.Delete(ctx, "Sales", ixKey, azcore.ETagAny),
		"Delete, bad key":                  f.idx.Delete(ctx, "Sales", "a#b", azcore.ETagAny),
		"Delete, no partition":             f.idx.Delete(ctx, "", "1", azcore.ETagAny),
		"FindIDs, value too long":          second(f.idx.FindIDs(ctx, "Sales", long)),
		"FindIDs, PartitionKey with ?":     second(f.idx.FindIDs(ctx, "a?b", "Jones")),
		"Find, PartitionKey with \\":       second(find(ctx, f.idx, `a\b`, "Jones")),
	} {
		if !errors.Is(err, indexentity.ErrInvalid) || !errors.Is(err, table.ErrInvalidKey) {
			t.Errorf("%s: %v, want ErrInvalid and table.ErrInvalidKey", name, err)
		}
	}
	f.trips(t, "invalid keys", 0)
}

// TestPlantedListsRefused: a list read back is followed only if it is one
// this Index writes: every id the id of an entity it accepts (valid keys,
// none under reserved.Prefix); in the same-partition store a RowKey
// of the list's own partition, in the others an entity of any partition
// (the lookups are organisation-wide, and a lookup given a PartitionKey
// returns only that partition's ids). A planted list is ErrCorrupt, never
// ids or entities; an intent naming a reserved row is refused without a
// request.
func TestPlantedListsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reservedID := keys.Join(indexentity.KeyPrefix, "LastName", "Smith")

	t.Run("same partition", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		for _, ids := range []any{
			"000001/" + reservedID + "/", // names the index entity of Smith
			"000001/a#b/",                // not a key
			int32(7),                     // not a list
		} {
			plant := table.Dynamic{PartitionKey: "Sales", RowKey: keys.Join(indexentity.KeyPrefix, "LastName", "Jones"), Properties: map[string]any{indexentity.ListProperty + "00": ids}}
			if _, err := f.clean.Upsert(ctx, plant, table.Replace); err != nil {
				t.Fatal(err)
			}
			if got, err := f.idx.FindIDs(ctx, "Sales", "Jones"); !errors.Is(err, indexentity.ErrCorrupt) {
				t.Errorf("FindIDs of the list %v = %v, %v; want ErrCorrupt", ids, got, err)
			}
			if got, err := find(ctx, f.idx, "Sales", "Jones"); !errors.Is(err, indexentity.ErrCorrupt) {
				t.Errorf("Find of the list %v = %v, %v; want ErrCorrupt", ids, got, err)
			}
			if _, err := f.idx.Insert(ctx, emp("Sales", 2, "Jones")); !errors.Is(err, indexentity.ErrCorrupt) {
				t.Errorf("Insert into the list %v: %v, want ErrCorrupt", ids, err)
			}
		}
	})

	for _, store := range []int{sameTable, blobStore} {
		t.Run(storeNames[store], func(t *testing.T) {
			t.Parallel()
			r := newRig(t, store)
			// HR/007 is Smith; a planted list of Jones names it and a reserved row.
			if _, err := r.clean.Insert(ctx, table.Dynamic{PartitionKey: "HR", RowKey: "007", Properties: map[string]any{"LastName": "Smith"}}); err != nil {
				t.Fatal(err)
			}
			if _, err := r.clean.Insert(ctx, table.Dynamic{PartitionKey: "Sales", RowKey: "001", Properties: map[string]any{"LastName": "Jones"}}); err != nil {
				t.Fatal(err)
			}
			plant := func(ids ...string) {
				t.Helper()
				if store == blobStore {
					text := strings.Join(ids, "\n") + "\n"
					if _, err := r.blobs.NewBlockBlobClient(keys.Join("LastName", "Jones")).UploadBuffer(ctx, []byte(text), nil); err != nil {
						t.Fatal(err)
					}
					return
				}
				d := table.Dynamic{PartitionKey: keys.Join(indexentity.KeyPrefix, "LastName", "Jones"), RowKey: indexentity.KeyPrefix,
					Properties: map[string]any{indexentity.ListProperty + "00": strings.Join(ids, "/") + "/"}}
				if _, err := r.ixClean.Upsert(ctx, d, table.Replace); err != nil {
					t.Fatal(err)
				}
			}
			// Another partition's entity: returned only by an
			// organisation-wide lookup, and only if it has the value.
			plant(keys.Join("HR", "007"), keys.Join("Sales", "001"))
			if got, err := find(ctx, r.idx, "Sales", "Jones"); err != nil || len(got) != 1 || got[0].Department != "Sales" {
				t.Errorf("Find in Sales = %+v, %v; want Sales/001 only", got, err)
			}
			if got, err := find(ctx, r.idx, "", "Jones"); err != nil || len(got) != 1 || got[0].Department != "Sales" {
				t.Errorf("Find organisation-wide = %+v, %v; want Sales/001 only (HR/007 is a Smith)", got, err)
			}
			for _, bad := range []string{
				keys.Join(reservedID, indexentity.KeyPrefix), // the index entity of Smith
				keys.Join("Sales", indexentity.KeyPrefix+"x"),
				keys.Join("Sales", "a#b"),
				"Sales",                      // not two keys
				keys.Join("", "001"),         // no PartitionKey
				keys.Join("Sales", "1", "2"), // three
			} {
				plant(keys.Join("Sales", "001"), bad)
				if got, err := r.idx.FindIDs(ctx, "", "Jones"); !errors.Is(err, indexentity.ErrCorrupt) {
					t.Errorf("FindIDs of a list holding %q = %v, %v; want ErrCorrupt", bad, got, err)
				}
				if got, err := find(ctx, r.idx, "Sales", "Jones"); !errors.Is(err, indexentity.ErrCorrupt) {
					t.Errorf("Find of a list holding %q = %v, %v; want ErrCorrupt", bad, got, err)
				}
			}
			// A forged intent naming a reserved row reads and writes nothing.
			r.Faults.Reset()
			err := indexentity.Reconcile(ctx, r.idx, reservedID, indexentity.KeyPrefix, "Jones")
			if !errors.Is(err, indexentity.ErrCorrupt) {
				t.Errorf("an intent naming an index entity: %v, want ErrCorrupt", err)
			}
			if n := r.Faults.Count(); n != 0 {
				t.Errorf("an intent naming an index entity sent %d requests", n)
			}
		})
	}
}

// TestBlobSizeCapped: a list's blob is read only up to MaxBlobSize (lowered
// here to 1 KiB): a larger blob, whether its size is declared
// (Content-Length) or not, is ErrCorrupt and table.ErrTooLarge, and a write
// that would make a list larger fails with table.ErrTooLarge before any
// upload.
func TestBlobSizeCapped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRig(t, blobStore)
	indexentity.SetMaxBlobSize(r.idx, 1<<10)
	var ids []string
	for i := range 100 {
		ids = append(ids, keys.Join("Sales", keys.Pad(uint64(i), 20))) // 28 bytes a line
	}
	text := []byte(strings.Join(ids, "\n") + "\n")
	name := keys.Join("LastName", "Jones")
	if _, err := r.blobs.NewBlockBlobClient(name).UploadBuffer(ctx, text, nil); err != nil {
		t.Fatal(err)
	}
	tooLarge := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, indexentity.ErrCorrupt) || !errors.Is(err, table.ErrTooLarge) {
			t.Errorf("%s: %v, want ErrCorrupt and table.ErrTooLarge", what, err)
		}
	}
	_, err := r.idx.FindIDs(ctx, "", "Jones")
	tooLarge("FindIDs of a 2.8 KiB blob", err)
	// The same blob sent without a Content-Length (chunked).
	r.Faults.Inject(faults.Fault{Match: r.on(lists, func(q *http.Request) bool { return q.Method == http.MethodGet }), Respond: func(q *http.Request) *http.Response {
		h := http.Header{}
		h.Set("ETag", `"0x1"`)
		h.Set("Content-Type", "application/octet-stream")
		return &http.Response{StatusCode: http.StatusOK, Header: h, ContentLength: -1, Body: io.NopCloser(bytes.NewReader(text)), Request: q}
	}})
	_, err = r.idx.FindIDs(ctx, "", "Jones")
	tooLarge("FindIDs of a 2.8 KiB blob without a Content-Length", err)

	// A list that would pass 1 KiB is never uploaded.
	var seed []indexentity.ID
	for i := range 40 {
		seed = append(seed, indexentity.ID{PartitionKey: "Sales", RowKey: keys.Pad(uint64(i), 20)})
	}
	r.Faults.Reset()
	err = indexentity.SeedList(ctx, r.idx, "", "Smith", seed)
	if !errors.Is(err, table.ErrTooLarge) {
		t.Errorf("writing a 1.1 KiB list: %v, want table.ErrTooLarge", err)
	}
	for _, q := range r.requests(lists) {
		if q.Method != http.MethodGet {
			t.Errorf("a list too large was sent: %s %s", q.Method, q.URL)
		}
	}
	if err := indexentity.SeedList(ctx, r.idx, "", "Smith", seed[:30]); err != nil {
		t.Errorf("writing a list of 0.8 KiB: %v", err)
	}
}

// sasContainer returns a plain SDK client of container name at serviceURL
// authorised by a container SAS, the SAS's signature, and the transport it
// sends through.
func sasContainer(t *testing.T, serviceURL, name string) (*container.Client, string, *faults.Transport) {
	t.Helper()
	cred, err := azblob.NewSharedKeyCredential(emulator.DevAccount, emulator.DevKey)
	if err != nil {
		t.Fatal(err)
	}
	qp, err := sas.BlobSignatureValues{
		Protocol: sas.ProtocolHTTPSandHTTP, ExpiryTime: time.Now().Add(time.Hour), ContainerName: name,
		Permissions: (&sas.ContainerPermissions{Read: true, Add: true, Create: true, Write: true, Delete: true, List: true}).String(),
	}.SignWithSharedKey(cred)
	if err != nil {
		t.Fatal(err)
	}
	ft := &faults.Transport{}
	o := &container.ClientOptions{}
	o.Transport = ft
	o.Retry.MaxRetries = -1 // the SDK's own policy, without its waits
	c, err := container.NewClientWithNoCredential(strings.TrimSuffix(serviceURL, "/")+"/"+name+"?"+qp.Encode(), o)
	if err != nil {
		t.Fatal(err)
	}
	return c, qp.Signature(), ft
}

// TestSASSignatureNeverInErrors: the blob store over a plain SDK container
// client authorised by a SAS: every operation that reads or writes a blob
// (FindIDs, Find, the handler's pass) fails, through a refused
// connection (whose *url.Error quotes the request URL), an error status on
// every request, or on the writes only, without the signature, raw or
// URL-encoded, in its error.
func TestSASSignatureNeverInErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRig(t, blobStore)
	if _, err := r.clean.Insert(ctx, table.Dynamic{PartitionKey: "Sales", RowKey: "001", Properties: map[string]any{"LastName": "Jones"}}); err != nil {
		t.Fatal(err)
	}
	name := containerName(r.blobs.URL())
	for _, mode := range []string{"refused connection", "error status", "writes fail", "writes refused"} {
		serviceURL := "http://127.0.0.1:1/" + emulator.DevAccount // nothing listens on port 1
		if mode != "refused connection" {
			serviceURL = strings.TrimSuffix(r.blobs.URL(), "/"+name)
		}
		c, sig, ft := sasContainer(t, serviceURL, name)
		for range 100 {
			switch mode {
			case "error status":
				ft.Inject(faults.Fault{Status: http.StatusForbidden, ErrorCode: "AuthenticationFailed"})
			case "writes fail":
				ft.Inject(faults.Fault{Match: func(q *http.Request) bool { return q.Method != http.MethodGet }, Status: http.StatusForbidden, ErrorCode: "AuthenticationFailed"})
			}
		}
		if mode == "writes refused" {
			ft.Next = refuseWrites{}
		}
		x, err := indexentity.New(r.employees, "LastName", lastName, &indexentity.Options{Queue: r.q, Blobs: c, Retry: &testrig.Contention})
		if err != nil {
			t.Fatal(err)
		}
		leaks := func(s string) bool { return strings.Contains(s, sig) || strings.Contains(s, url.QueryEscape(sig)) }
		ops := map[string]func() error{
			"FindIDs": func() error { _, err := x.FindIDs(ctx, "", "Jones"); return err },
			"Find":    func() error { _, err := find(ctx, x, "Sales", "Jones"); return err },
			"handler": func() error { return indexentity.Reconcile(ctx, x, "Sales", "001", "Jones") },
		}
		if strings.HasPrefix(mode, "writes") {
			ops = map[string]func() error{"handler": ops["handler"]}
		}
		for op, fn := range ops {
			err := fn()
			if err == nil {
				t.Fatalf("%s, %s: no error", mode, op)
			}
			if leaks(err.Error()) {
				t.Errorf("%s, %s: the signature is in the error: %v", mode, op, err)
			}
			var ue *url.Error
			if errors.As(err, &ue) && leaks(ue.URL) {
				t.Errorf("%s, %s: the signature is in the wrapped *url.Error: %s", mode, op, ue.URL)
			}
		}
		if ft.Count() == 0 {
			t.Fatalf("%s: no blob request was sent", mode)
		}
	}
}

// refuseWrites sends reads to the emulator and every other request to a
// port where nothing listens, so that only writes fail with a *url.Error
// quoting their URL.
type refuseWrites struct{}

func (refuseWrites) Do(q *http.Request) (*http.Response, error) {
	if q.Method != http.MethodGet {
		q = q.Clone(q.Context())
		q.URL.Host = "127.0.0.1:1"
	}
	return http.DefaultClient.Do(q)
}
