package largeentity_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/tablekit/tablekit/patterns/largeentity"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

// The benchmark compares an entity with a 4 MiB photo written and read
// through largeentity with the hand-written sequence a careful user writes
// with azblob and aztables alone, on clients with the SDKs' defaults: the
// photo uploaded (UploadBuffer) under a fresh name, then the entity
// (a tagged struct, encoding/json) upserted with the blob's name; read
// back with GetEntity + json.Unmarshal, then DownloadStream into a buffer
// of the blob's length. That sequence (side "raw") checks nothing: a
// damaged, truncated or swapped blob comes back as data. Side "rawsha"
// is the same sequence with the check largeentity makes: the photo's
// SHA-256 computed before the upload and stored in the entity, and
// computed again after the download and compared. Each iteration runs
// the sides one after another, in turn order reversed every other
// iteration, and reports each side's time per operation, its rate in
// MB/s, and the others' time over largeentity's (above 1: largeentity is
// faster). The blobs each write replaces are deleted, and a garbage
// collection runs, outside the timed regions.

const benchPhoto = 4 << 20

type rawEmployee struct {
	PartitionKey, RowKey string
	Name                 string
	PhotoBlob            string
	PhotoSHA256          string `json:",omitempty"`
}

// rawLarge is the careful user's blob-then-entity sequence; with check,
// it stores and verifies the photo's SHA-256.
type rawLarge struct {
	tbl   *aztables.Client
	blobs *container.Client
	check bool
}

func (r rawLarge) write(ctx context.Context, pk, rk, name string, photo []byte) (string, error) {
	var id [16]byte
	_, _ = rand.Read(id[:])
	e := rawEmployee{PartitionKey: pk, RowKey: rk, Name: name, PhotoBlob: "raw/" + pk + "/" + rk + "/" + hex.EncodeToString(id[:])}
	if r.check {
		h := sha256.Sum256(photo)
		e.PhotoSHA256 = hex.EncodeToString(h[:])
	}
	if _, err := r.blobs.NewBlockBlobClient(e.PhotoBlob).UploadBuffer(ctx, photo, nil); err != nil {
		return "", err
	}
	body, err := json.Marshal(e)
	if err != nil {
		return "", err
	}
	_, err = r.tbl.UpsertEntity(ctx, body, &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeReplace})
	return e.PhotoBlob, err
}

func (r rawLarge) read(ctx context.Context, pk, rk string) (rawEmployee, []byte, error) {
	resp, err := r.tbl.GetEntity(ctx, pk, rk, nil)
	if err != nil {
		return rawEmployee{}, nil, err
	}
	var e rawEmployee
	if err := json.Unmarshal(resp.Value, &e); err != nil {
		return e, nil, err
	}
	dl, err := r.blobs.NewBlobClient(e.PhotoBlob).DownloadStream(ctx, nil)
	if err != nil {
		return e, nil, err
	}
	defer dl.Body.Close()
	var photo []byte
	if dl.ContentLength == nil {
		photo, err = io.ReadAll(dl.Body)
	} else {
		photo = make([]byte, *dl.ContentLength)
		_, err = io.ReadFull(dl.Body, photo)
	}
	if err == nil && r.check {
		if h := sha256.Sum256(photo); hex.EncodeToString(h[:]) != e.PhotoSHA256 {
			err = errors.New("the photo's SHA-256 differs")
		}
	}
	return e, photo, err
}

// BenchmarkLarge4MiB writes and reads an entity with a 4 MiB photo,
// largeentity against the raw sequences; see above.
func BenchmarkLarge4MiB(b *testing.B) {
	env := tabletest.New(b)
	tc := env.Table(nil)
	blobs := env.Container(nil)
	tbl, _ := table.New[table.Dynamic](tc, nil)
	type employee struct {
		PartitionKey, RowKey string
		Name                 string
		Photo                []byte `largeentity:"offload"`
	}
	s, err := largeentity.New[employee](tbl, blobs, nil)
	if err != nil {
		b.Fatal(err)
	}
	raws := map[string]rawLarge{"raw": {tc, blobs, false}, "rawsha": {tc, blobs, true}}
	ctx := context.Background()
	photos := [2][]byte{make([]byte, benchPhoto), make([]byte, benchPhoto)}
	for _, p := range photos {
		_, _ = rand.Read(p)
	}
	res, err := s.Insert(ctx, employee{PartitionKey: "le", RowKey: "e", Name: "Jo", Photo: photos[0]})
	if err != nil {
		b.Fatal(err)
	}
	current := map[string]string{"large": res.Blobs[0].Name} // each side's blob
	for name, r := range raws {
		if current[name], err = r.write(ctx, name, "e", "Jo", photos[0]); err != nil {
			b.Fatal(err)
		}
	}
	sides := []string{"large", "raw", "rawsha"}
	ops := map[string]map[string]func(i int) error{
		"write": {
			"large": func(i int) error {
				res, err := s.Update(ctx, employee{PartitionKey: "le", RowKey: "e", Name: "Jo", Photo: photos[i%2]}, azcore.ETagAny)
				if err == nil {
					current["large"+"-new"] = res.Blobs[0].Name
				}
				return err
			},
		},
		"read": {
			"large": func(int) error {
				e, err := s.Get(ctx, "le", "e", nil)
				if err == nil && len(e.Value.Photo) != benchPhoto {
					err = fmt.Errorf("read %d bytes", len(e.Value.Photo))
				}
				return err
			},
		},
	}
	for name, r := range raws {
		ops["write"][name] = func(i int) error {
			blob, err := r.write(ctx, name, "e", "Jo", photos[i%2])
			current[name+"-new"] = blob
			return err
		}
		ops["read"][name] = func(int) error {
			_, p, err := r.read(ctx, name, "e")
			if err == nil && len(p) != benchPhoto {
				err = fmt.Errorf("read %d bytes", len(p))
			}
			return err
		}
	}
	// A few unmeasured reads of each side warm the emulator and the
	// connections first.
	for range 3 {
		for _, side := range sides {
			if err := ops["read"][side](0); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, op := range []string{"write", "read"} {
		b.Run(op, func(b *testing.B) {
			d := map[string]time.Duration{}
			for i := range b.N {
				for k := range sides {
					side := sides[k]
					if i%2 == 1 {
						side = sides[len(sides)-1-k]
					}
					runtime.GC() // the other sides' garbage is not this side's to collect
					t0 := time.Now()
					err := ops[op][side](i)
					d[side] += time.Since(t0)
					if err != nil {
						b.Fatal(err)
					}
					if op == "write" { // the replaced version's blob: Sweep's job, here at once
						if _, err := blobs.NewBlobClient(current[side]).Delete(ctx, nil); err != nil {
							b.Fatal(err)
						}
						current[side] = current[side+"-new"]
					}
				}
			}
			n := float64(b.N)
			for _, side := range sides {
				b.ReportMetric(float64(d[side].Microseconds())/n/1000, side+"-ms/op")
				b.ReportMetric(benchPhoto*n/d[side].Seconds()/1e6, side+"-MB/s")
			}
			b.ReportMetric(float64(d["raw"])/float64(d["large"]), "raw/large")
			b.ReportMetric(float64(d["rawsha"])/float64(d["large"]), "rawsha/large")
		})
	}
}
