package largeentity_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/internal/emulator"
	"github.com/tablekit/tablekit/internal/reserved"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/patterns/largeentity"
	"github.com/tablekit/tablekit/patterns/table"
)

// TestForeignPointers plants rows as a tenant that can write one entity
// (a partition-scoped table SAS) could: pointers copied from another
// entity, or naming any blob of the container. Reads refuse them
// (ErrForeignBlob, also ErrCorrupt) without reading the blob; Delete,
// Update and Sweep leave the other entity's blob, which stays readable.
func TestForeignPointers(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := newStore[Employee](t, f, nil)
	ctx := context.Background()
	victim := Employee{Name: "B", Photo: photo(100<<10, 1), CV: strings.Repeat("b", 40<<10)}
	vres, err := s.Insert(ctx, at("HR", "007", victim))
	if err != nil {
		t.Fatal(err)
	}
	own, err := s.Insert(ctx, at("Sales", "own", Employee{Name: "A", Photo: photo(100<<10, 2), CV: strings.Repeat("a", 40<<10)}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.cleanBlobs.NewBlockBlobClient("secret/payroll.csv").UploadBuffer(ctx, []byte("salaries"), nil); err != nil {
		t.Fatal(err)
	}
	stored, err := f.cleanTbl.Get(ctx, "HR", "007", nil)
	if err != nil {
		t.Fatal(err)
	}
	copied := stored.Value.Properties[largeentity.PointerPrefix+"Photo"].(string) // HR/007's pointer, as stored
	var vphoto, vcv, ocv largeentity.Blob
	for _, b := range vres.Blobs {
		switch b.Property {
		case "Photo":
			vphoto = b
		case "CV":
			vcv = b
		}
	}
	for _, b := range own.Blobs {
		if b.Property == "CV" {
			ocv = b
		}
	}
	pointer := func(name string, size int64, sum string) string {
		return fmt.Sprintf(`{"blob":%q,"size":%d,"sha256":%q}`, name, size, sum)
	}
	ownDir := own.Blobs[0].Name[:strings.LastIndex(own.Blobs[0].Name, "/")+1]         // Sales/own's CV directory
	photoDir := strings.Replace(ownDir, "/CV/", "/Photo/", 1)                         // Sales/own's Photo directory
	vid := vphoto.Name[strings.LastIndex(vphoto.Name, "/")+1:]                        // the victim's write-unique id
	vdir := strings.TrimSuffix(strings.TrimSuffix(vphoto.Name, vid), "/Photo/") + "/" // the victim's key directory
	if !strings.HasSuffix(ownDir, "/CV/") || !strings.Contains(vphoto.Name, "/Photo/") {
		t.Fatalf("unexpected names %s, %s", ownDir, vphoto.Name)
	}
	forged := []struct{ what, pk, rk, ptr string }{
		{"HR/007's pointer copied", "Sales", "a", copied},
		{"HR/007's CV blob", "Sales", "a", pointer(vcv.Name, vcv.Size, vcv.SHA256)},
		{"any blob of the container", "Sales", "a", pointer("secret/payroll.csv", 8, strings.Repeat("0", 64))},
		{"a path out of its directory", "Sales", "own", pointer(photoDir+"../../"+strings.TrimPrefix(vdir, f.tbl.Name()+"/")+"Photo/"+vid, vphoto.Size, vphoto.SHA256)},
		{"an id of the wrong shape", "Sales", "own", pointer(photoDir+strings.ToUpper(vid), vphoto.Size, vphoto.SHA256)},
		{"another Prefix's name", "Sales", "own", pointer("other/"+strings.TrimPrefix(photoDir, f.tbl.Name()+"/")+vid, vphoto.Size, vphoto.SHA256)},
		{"HR/007's pointer in HR/008's row", "HR", "008", copied},
		{"its own CV blob as its Photo", "Sales", "own", pointer(ocv.Name, ocv.Size, ocv.SHA256)},
	}
	for _, fg := range forged {
		what, pk, rk := fg.what, fg.pk, fg.rk
		if _, err := f.cleanTbl.Upsert(ctx, table.Dynamic{PartitionKey: pk, RowKey: rk, Properties: map[string]any{"Name": "A", largeentity.PointerPrefix + "Photo": fg.ptr}}, table.Replace); err != nil {
			t.Fatal(err)
		}
		f.reset()
		got, err := s.Get(ctx, pk, rk, nil)
		if !errors.Is(err, largeentity.ErrForeignBlob) || !errors.Is(err, largeentity.ErrCorrupt) || got.Value.Photo != nil || got.Value.Name != "" {
			t.Fatalf("%s: Get = %d bytes, %v; want ErrForeignBlob", what, len(got.Value.Photo), err)
		}
		f.trips(t, what+": Get (the blob not read)", 1, 0)
		for _, err := range s.Range(ctx, pk, rk, "", nil) {
			if !errors.Is(err, largeentity.ErrForeignBlob) {
				t.Fatalf("%s: Range = %v", what, err)
			}
		}
		called := false
		if _, err := s.Modify(ctx, pk, rk, func(*Employee) error { called = true; return nil }); !errors.Is(err, largeentity.ErrForeignBlob) || called {
			t.Fatalf("%s: Modify = %v (fn called: %v)", what, err, called)
		}
		f.reset()
		if err := s.Delete(ctx, pk, rk, azcore.ETagAny); err != nil {
			t.Fatalf("%s: Delete = %v", what, err)
		}
		f.trips(t, what+": Delete (no blob deleted)", 2, 0)
		if _, err := f.cleanTbl.Get(ctx, pk, rk, nil); !errors.Is(err, table.ErrNotFound) {
			t.Fatalf("%s: the row is still there after Delete: %v", what, err)
		}
	}
	// Update replaces a forged row, leaving the blob it named.
	if _, err := f.cleanTbl.Upsert(ctx, table.Dynamic{PartitionKey: "Sales", RowKey: "a", Properties: map[string]any{largeentity.PointerPrefix + "Photo": copied}}, table.Replace); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, at("Sales", "a", Employee{Name: "A2", Photo: photo(100<<10, 3)}), azcore.ETagAny); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(2 * largeentity.DefaultGraceForTest)
	if _, err := s.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	blobs := f.blobNames(t)
	if string(blobs["secret/payroll.csv"]) != "salaries" {
		t.Fatal("the container's other blob was deleted or changed")
	}
	got, err := s.Get(ctx, "HR", "007", nil)
	if err != nil || got.Value.Name != "B" || string(got.Value.Photo) != string(victim.Photo) || got.Value.CV != victim.CV {
		t.Fatalf("HR/007 after the forged rows' reads, deletes, update and a Sweep: %v", err)
	}
}

// TestOversize: a pointer recording more than MaxValueSize is refused
// before its blob is read (nothing allocated for the size it claims), a
// blob holding more than its pointer records is refused from its
// Content-Length, and a value over MaxValueSize is refused before the
// network.
func TestOversize(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := newStore[Employee](t, f, nil)
	ctx := context.Background()
	res, err := s.Insert(ctx, at("Sales", "1", Employee{Name: "n", Photo: photo(100<<10, 1)}))
	if err != nil {
		t.Fatal(err)
	}
	b := res.Blobs[0]
	for what, size := range map[string]int64{"MaxValueSize+1": largeentity.MaxValueSize + 1, "1 TiB": 1 << 40, "max int64": 1<<63 - 1} {
		ptr := fmt.Sprintf(`{"blob":%q,"size":%d,"sha256":%q}`, b.Name, size, b.SHA256)
		if _, err := f.cleanTbl.Upsert(ctx, table.Dynamic{PartitionKey: "Sales", RowKey: "1", Properties: map[string]any{largeentity.PointerPrefix + "Photo": ptr}}, table.Replace); err != nil {
			t.Fatal(err)
		}
		f.reset()
		if _, err := s.Get(ctx, "Sales", "1", nil); !errors.Is(err, table.ErrTooLarge) || !errors.Is(err, largeentity.ErrCorrupt) {
			t.Fatalf("a pointer recording %s: Get = %v, want ErrCorrupt and table.ErrTooLarge", what, err)
		}
		f.trips(t, "Get of a pointer recording "+what+" (the blob not read)", 1, 0)
	}
	// A blob planted under the entity's own name, larger than the pointer
	// says: refused from the response's headers.
	if _, err := f.cleanBlobs.NewBlockBlobClient(b.Name).UploadBuffer(ctx, photo(1<<20, 9), nil); err != nil {
		t.Fatal(err)
	}
	ptr := fmt.Sprintf(`{"blob":%q,"size":%d,"sha256":%q}`, b.Name, b.Size, b.SHA256)
	if _, err := f.cleanTbl.Upsert(ctx, table.Dynamic{PartitionKey: "Sales", RowKey: "1", Properties: map[string]any{largeentity.PointerPrefix + "Photo": ptr}}, table.Replace); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "Sales", "1", nil); !errors.Is(err, largeentity.ErrCorrupt) {
		t.Fatalf("a blob larger than its pointer: Get = %v", err)
	}
	// The value is never touched before it is refused, so its pages are
	// never backed by memory.
	f.reset()
	invalid(t, "Insert of a value over MaxValueSize", second(s.Insert(ctx, at("Sales", "2", Employee{Photo: make([]byte, largeentity.MaxValueSize+1)}))), table.ErrTooLarge)
	f.trips(t, "Insert of a value over MaxValueSize", 0, 0)
}

// TestKeyErrorsMatchErrInvalid: keys refused before the network match
// both ErrInvalid and table.ErrInvalidKey, for every operation.
func TestKeyErrorsMatchErrInvalid(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := newStore[Employee](t, f, nil)
	ctx := context.Background()
	f.reset()
	errs := map[string]error{
		"Insert, empty PartitionKey": second(s.Insert(ctx, at("", "1", Employee{}))),
		"Insert, '/' in the RowKey":  second(s.Insert(ctx, at("Sales", "a/b", Employee{}))),
		"Update":                     second(s.Update(ctx, at("Sales", "a#b", Employee{}), azcore.ETagAny)),
		"Get":                        second(s.Get(ctx, "", "1", nil)),
		"Modify":                     second(s.Modify(ctx, "Sales\x01", "1", func(*Employee) error { return nil })),
		"Delete":                     s.Delete(ctx, "Sales", "a?b", azcore.ETagAny),
		"Get, a reserved RowKey":     second(s.Get(ctx, "Sales", reserved.Prefix+"x", nil)),
		"Delete, a reserved key":     s.Delete(ctx, reserved.Prefix+"x", "1", azcore.ETagAny),
	}
	for _, err := range s.Range(ctx, "", "", "", nil) {
		errs["Range, empty PartitionKey"] = err
	}
	for _, err := range s.Range(ctx, "a\\b", "", "", nil) {
		errs["Range, '\\' in the PartitionKey"] = err
	}
	for what, err := range errs {
		invalid(t, what, err, table.ErrInvalidKey)
	}
	f.trips(t, "operations with bad keys", 0, 0)
}

// sasContainer returns a client of container name at serviceURL
// authorised by a container SAS, the SAS's signature, and the
// transport the client sends through.
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
	o.Retry.MaxRetries = -1 // the SDK's own policy, as a plain client has it, without its waits
	c, err := container.NewClientWithNoCredential(strings.TrimSuffix(serviceURL, "/")+"/"+name+"?"+qp.Encode(), o)
	if err != nil {
		t.Fatal(err)
	}
	return c, qp.Signature(), ft
}

// TestSASSignatureNeverInErrors: through a plain SDK container client
// authorised by a SAS, every operation that talks to blobs fails (a
// refused connection, whose *url.Error quotes the request URL; or an error
// status) without the signature, raw or URL-encoded, in its error.
func TestSASSignatureNeverInErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	w := newStore[Employee](t, f, nil)
	if _, err := w.Insert(ctx, at("Sales", "1", Employee{Name: "n", Photo: photo(100<<10, 1)})); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Insert(ctx, at("Sales", "2", Employee{Name: "n", Photo: photo(100<<10, 2)})); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Update(ctx, at("Sales", "2", Employee{Name: "n", Photo: photo(100<<10, 3)}), azcore.ETagAny); err != nil { // an orphan for Sweep
		t.Fatal(err)
	}
	f.clock.Advance(2 * largeentity.DefaultGraceForTest)
	name := containerName(f.blobs)
	for _, mode := range []string{"refused connection", "error status"} {
		serviceURL := "http://127.0.0.1:1/" + emulator.DevAccount // nothing listens on port 1
		if mode == "error status" {
			serviceURL = strings.TrimSuffix(f.blobs.URL(), "/"+name)
		}
		c, sig, ft := sasContainer(t, serviceURL, name)
		if mode == "error status" {
			for range 100 {
				ft.Inject(faults.Fault{Status: http.StatusForbidden, ErrorCode: "AuthenticationFailed"})
			}
		}
		leaks := func(s string) bool { return strings.Contains(s, sig) || strings.Contains(s, url.QueryEscape(sig)) }
		s, err := largeentity.New(f.tbl, c, &largeentity.Options[Employee]{Now: f.clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		ops := map[string]func() error{
			"Insert": func() error {
				_, err := s.Insert(ctx, at("Sales", "3", Employee{Photo: photo(100<<10, 4)}))
				return err
			},
			"Update": func() error {
				_, err := s.Update(ctx, at("Sales", "1", Employee{Photo: photo(100<<10, 5)}), azcore.ETagAny)
				return err
			},
			"Get":    func() error { _, err := s.Get(ctx, "Sales", "1", nil); return err },
			"Modify": func() error { _, err := s.Modify(ctx, "Sales", "1", func(*Employee) error { return nil }); return err },
			"Range": func() error {
				for _, err := range s.Range(ctx, "Sales", "", "", nil) {
					if err != nil {
						return err
					}
				}
				return nil
			},
			"Sweep": func() error { _, err := s.Sweep(ctx); return err },
		}
		// Delete does not fail on its blob deletes (Sweep's orphans then).
		if err := s.Delete(ctx, "Sales", "2", azcore.ETagAny); err != nil && leaks(err.Error()) {
			t.Errorf("%s, Delete: the signature is in the error: %v", mode, err)
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

// A blob planted under the Store's prefix, whose name's hash anyone can
// compute, with metadata naming keys no entity can have (reserved) or a
// property no pointer can name, is skipped by Sweep: it neither stops the
// sweep of the honest orphans nor gets deleted.
func TestSweepSkipsPlantedMetadata(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	s := newStore[Employee](t, f, nil)
	ctx := context.Background()
	if _, err := s.Insert(ctx, at("Sales", "1", Employee{Name: "A", Photo: photo(100<<10, 1)})); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Modify(ctx, "Sales", "1", func(e *Employee) error { e.Photo = photo(100<<10, 2); return nil }); err != nil {
		t.Fatal(err) // the first photo's blob is now an orphan
	}
	enc := func(k string) *string { v := base64.RawURLEncoding.EncodeToString([]byte(k)); return &v }
	plant := func(pk, rk, prop string) string {
		h := sha256.Sum256([]byte(pk + "\x00" + rk))
		name := f.tbl.Name() + "/" + hex.EncodeToString(h[:16]) + "/" + prop + "/" + strings.Repeat("ab", 16)
		_, err := f.cleanBlobs.NewBlockBlobClient(name).UploadBuffer(ctx, []byte("planted"), &blockblob.UploadBufferOptions{
			Metadata: map[string]*string{"pk": enc(pk), "rk": enc(rk), "property": &prop}})
		if err != nil {
			t.Fatal(err)
		}
		return name
	}
	planted := []string{plant(reserved.Prefix+"x", "1", "Photo"), plant("Sales", "2", "not a name")}
	f.clock.Advance(2 * largeentity.DefaultGraceForTest)
	sr, err := s.Sweep(ctx)
	if err != nil || sr.Deleted != 1 || sr.Skipped < 2 {
		t.Fatalf("Sweep = %+v, %v; want the orphan deleted and the 2 planted blobs skipped", sr, err)
	}
	for _, name := range planted {
		if _, err := f.cleanBlobs.NewBlobClient(name).GetProperties(ctx, nil); err != nil {
			t.Fatalf("a planted blob was deleted: %v", err)
		}
	}
	if got, err := s.Get(ctx, "Sales", "1", nil); err != nil || !bytes.Equal(got.Value.Photo, photo(100<<10, 2)) {
		t.Fatalf("the entity after Sweep: %v", err)
	}
}
