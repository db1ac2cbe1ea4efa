package largeentity_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
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
// back with GetEntity + json.Unmarshal, then DownloadStream + io.ReadAll.
// The raw sequence has none of largeentity's checks (no hash, so a
// damaged or swapped blob is returned as data; no conditional create; no
// orphan sweeping). Each iteration runs both sides one after another,
// alternating which goes first, and reports each side's time per
// operation, its rate in MB/s, and raw's time over largeentity's (above
// 1: largeentity is faster). The blobs each write replaces are deleted
// outside the timed region.

const benchPhoto = 4 << 20

type rawEmployee struct {
	PartitionKey, RowKey string
	Name                 string
	PhotoBlob            string
}

// rawLarge is the careful user's blob-then-entity sequence.
type rawLarge struct {
	tbl   *aztables.Client
	blobs *container.Client
}

func (r rawLarge) write(ctx context.Context, pk, rk, name string, photo []byte) (string, error) {
	var id [16]byte
	_, _ = rand.Read(id[:])
	blobName := "raw/" + pk + "/" + rk + "/" + hex.EncodeToString(id[:])
	if _, err := r.blobs.NewBlockBlobClient(blobName).UploadBuffer(ctx, photo, nil); err != nil {
		return "", err
	}
	body, err := json.Marshal(rawEmployee{pk, rk, name, blobName})
	if err != nil {
		return "", err
	}
	_, err = r.tbl.UpsertEntity(ctx, body, &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeReplace})
	return blobName, err
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
	photo, err := io.ReadAll(dl.Body)
	return e, photo, err
}

// BenchmarkLarge4MiB writes and reads an entity with a 4 MiB photo,
// largeentity against the raw sequence; see above.
func BenchmarkLarge4MiB(b *testing.B) {
	env := tabletest.New(b)
	tc := env.Table(nil)
	blobs := env.Container(nil)
	tbl, _ := table.New[table.Dynamic](tc)
	type employee struct {
		Name  string
		Photo []byte `largeentity:"offload"`
	}
	s, err := largeentity.New[employee](tbl, &largeentity.Options{Blobs: blobs})
	if err != nil {
		b.Fatal(err)
	}
	raw := rawLarge{tc, blobs}
	ctx := context.Background()
	photos := [2][]byte{make([]byte, benchPhoto), make([]byte, benchPhoto)}
	for _, p := range photos {
		_, _ = rand.Read(p)
	}
	res, err := s.Insert(ctx, "le", "e", employee{Name: "Jo", Photo: photos[0]})
	if err != nil {
		b.Fatal(err)
	}
	leBlob := res.Blobs[0].Name
	rawBlob, err := raw.write(ctx, "raw", "e", "Jo", photos[0])
	if err != nil {
		b.Fatal(err)
	}
	drop := func(name string) {
		if _, err := blobs.NewBlobClient(name).Delete(ctx, nil); err != nil {
			b.Fatal(err)
		}
	}
	type side struct{ d time.Duration }
	timed := func(s *side, fn func() error) {
		t0 := time.Now()
		err := fn()
		s.d += time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
	}
	report := func(b *testing.B, le, r side) {
		n := float64(b.N)
		b.ReportMetric(float64(le.d.Microseconds())/n/1000, "large-ms/op")
		b.ReportMetric(float64(r.d.Microseconds())/n/1000, "raw-ms/op")
		b.ReportMetric(benchPhoto*n/le.d.Seconds()/1e6, "large-MB/s")
		b.ReportMetric(benchPhoto*n/r.d.Seconds()/1e6, "raw-MB/s")
		b.ReportMetric(float64(r.d)/float64(le.d), "raw/large")
	}
	b.Run("write", func(b *testing.B) {
		var le, r side
		for i := range b.N {
			photo := photos[i%2]
			writeLE := func() {
				var res largeentity.Result
				timed(&le, func() (err error) {
					res, err = s.Update(ctx, "le", "e", employee{Name: "Jo", Photo: photo}, azcore.ETagAny)
					return err
				})
				drop(leBlob) // the replaced version's blob: Sweep's job, here at once
				leBlob = res.Blobs[0].Name
			}
			writeRaw := func() {
				var name string
				timed(&r, func() (err error) {
					name, err = raw.write(ctx, "raw", "e", "Jo", photo)
					return err
				})
				drop(rawBlob)
				rawBlob = name
			}
			if i%2 == 0 {
				writeLE()
				writeRaw()
			} else {
				writeRaw()
				writeLE()
			}
		}
		report(b, le, r)
	})
	b.Run("read", func(b *testing.B) {
		var le, r side
		readLE := func() {
			timed(&le, func() error {
				e, err := s.Get(ctx, "le", "e", nil)
				if err == nil && len(e.Value.Photo) != benchPhoto {
					err = fmt.Errorf("read %d bytes", len(e.Value.Photo))
				}
				return err
			})
		}
		readRaw := func() {
			timed(&r, func() error {
				_, p, err := raw.read(ctx, "raw", "e")
				if err == nil && len(p) != benchPhoto {
					err = fmt.Errorf("read %d bytes", len(p))
				}
				return err
			})
		}
		for i := range b.N {
			if i%2 == 0 {
				readLE()
				readRaw()
			} else {
				readRaw()
				readLE()
			}
		}
		report(b, le, r)
	})
}
