package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/tablekit/tablekit/internal/faults"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/bloblog"
	"github.com/tablekit/tablekit/patterns/largeentity"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/retry"
)

// container creates a blob container for a step, with a client that
// counts its requests, and returns a function that deletes it.
func (t *tour) container(ctx context.Context, name string) (*container.Client, *faults.Transport, func(), error) {
	ft := &faults.Transport{}
	o := &azblob.ClientOptions{}
	o.Transport = ft
	retry.Default.ApplyTo(&o.ClientOptions)
	svc, err := azblob.NewClientFromConnectionString(t.connStr, o)
	if err != nil {
		return nil, nil, nil, err
	}
	if _, err := svc.CreateContainer(ctx, name, nil); err != nil {
		return nil, nil, nil, err
	}
	ft.Reset()
	drop := func() { _, _ = svc.DeleteContainer(context.WithoutCancel(ctx), name, nil) }
	return svc.ServiceClient().NewContainerClient(name), ft, drop, nil
}

// largeEntity keeps an employee's photo in a blob beside the entity.
func (t *tour) largeEntity(ctx context.Context) error {
	photos, ft, drop, err := t.container(ctx, t.name+"photos")
	if err != nil {
		return err
	}
	defer drop()
	type Profile struct {
		table.Meta
		Department          string `table:",pk"`
		ID                  string `table:",rk"`
		FirstName, LastName string
		Photo               []byte `largeentity:"offload"`
	}
	tbl, err := table.New[table.Dynamic](table.NewClient(t.svc, t.name), nil)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	profiles, err := largeentity.New(tbl, photos, &largeentity.Options[Profile]{Prefix: "profiles", Now: clock})
	if err != nil {
		return err
	}
	id := keys.Pad(223, 6)
	photo := bytes.Repeat([]byte("JPEG"), 75_000) // 300 KB: more than the 64 KiB a property holds
	res, err := profiles.Insert(ctx, Profile{Department: "profiles-Sales", ID: id, FirstName: "Jo", LastName: "Jones", Photo: photo})
	if err != nil {
		return err
	}
	t.say("Insert: the 300 KB photo uploaded to blob %s (created only if absent),", res.Blobs[0].Name)
	t.say("then the entity written, holding the blob's name, size and SHA-256 (%s...) in %sPhoto: %d blob request, 1 table request",
		res.Blobs[0].SHA256[:12], largeentity.PointerPrefix, ft.Count())
	ft.Reset()
	e, err := profiles.Get(ctx, "profiles-Sales", id, nil)
	if err != nil || !bytes.Equal(e.Value.Photo, photo) {
		return fmt.Errorf("reading the photo back: %v", err)
	}
	t.say("Get: the entity, then the photo (%d blob read), its SHA-256 checked: %s %s, %d bytes", ft.Count(), e.Value.FirstName, e.Value.LastName, len(e.Value.Photo))
	ft.Reset()
	names, err := profiles.Get(ctx, "profiles-Sales", id, &largeentity.GetOptions{Select: []string{"FirstName", "LastName"}})
	if err != nil {
		return err
	}
	t.say("Get with Select FirstName, LastName: one point query, %d blob reads (%s %s, no photo)", ft.Count(), names.Value.FirstName, names.Value.LastName)

	// A crash between the upload and the entity write leaves an orphan,
	// never an entity pointing at nothing.
	newer := bytes.Repeat([]byte("PNG!"), 80_000)
	m, err := profiles.Modify(ctx, "profiles-Sales", id, func(p *Profile) error { p.Photo = newer; return nil })
	if err != nil {
		return err
	}
	t.say("Modify with a new photo: uploaded to a new blob, then the entity replaced If-Match the ETag read;")
	t.say("the old photo's blob stays for readers of the old version, until Sweep")
	tampered := append(bytes.Clone(newer[:len(newer)-1]), '?')
	if _, err := photos.NewBlockBlobClient(m.Blobs[0].Name).UploadBuffer(ctx, tampered, nil); err != nil {
		return err
	}
	if _, err := profiles.Get(ctx, "profiles-Sales", id, nil); !errors.Is(err, largeentity.ErrCorrupt) {
		return fmt.Errorf("a tampered photo: %v, want ErrCorrupt", err)
	}
	t.say("someone overwrites the photo's blob: Get answers largeentity.ErrCorrupt (the SHA-256 differs), never the data")
	if err := profiles.Delete(ctx, "profiles-Sales", id, azcore.ETagAny); err != nil {
		return err
	}
	t.say("Delete: the entity, then its blob")
	mu.Lock()
	now = now.Add(2 * time.Hour) // past the default grace (one hour)
	mu.Unlock()
	sr, err := profiles.Sweep(ctx)
	if err != nil {
		return err
	}
	t.say("Sweep, past the grace period: listed %d blob, read %d entity, deleted %d orphan (the first photo)", sr.Listed, sr.Entities, sr.Deleted)
	return nil
}

// blobLog keeps an hour of request logs in time-named append blobs.
func (t *tour) blobLog(ctx context.Context) error {
	logs, ft, drop, err := t.container(ctx, t.name+"logs")
	if err != nil {
		return err
	}
	defer drop()
	type Request struct {
		Method, Path string
		Status       int
		Millis       int
	}
	requests, err := bloblog.New[Request](logs, &bloblog.Options{Prefix: "web"})
	if err != nil {
		return err
	}
	hour := time.Date(2014, 7, 31, 18, 0, 0, 0, time.UTC)
	paths := []string{"/", "/cart", "/checkout", "/help", "/api/items"}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for s, server := range []string{"web1", "web2"} {
		i := 0
		w, err := requests.NewWriter(&bloblog.WriterOptions{ID: server, FlushInterval: -1, Now: func() time.Time { // an hour of traffic, simulated
			i++
			return hour.Add(time.Duration(2*i+s) * 350 * time.Millisecond)
		}})
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range 5_000 {
				if err := w.Append(ctx, Request{"GET", paths[r%len(paths)], 200, r % 97}); err != nil {
					errs <- err
					return
				}
			}
			errs <- w.Close(ctx)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	t.say("two servers logged 5,000 requests each over an hour: Append buffers; a flush (here only by size, 1 MiB,")
	t.say("and on Close) appends up to 4 MiB at once: %d requests in all, per server a create, one append and the", ft.Count())
	t.say("last entry time recorded on Close (as table entities: 10,000 inserts, or 100 batches into one hot partition)")
	var names []string
	pager := logs.NewListBlobsFlatPager(nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return err
		}
		for _, b := range page.Segment.BlobItems {
			names = append(names, *b.Name)
		}
	}
	t.say("blobs named by hour, as Storage Analytics names its logs: %s", strings.Join(names, ", "))
	ft.Reset()
	from := hour.Add(15 * time.Minute)
	n, slow := 0, 0
	var last time.Time
	for e, err := range requests.Range(ctx, from, from.Add(15*time.Minute)) {
		if err != nil {
			return err
		}
		if e.Time.Before(last) {
			return fmt.Errorf("entries out of time order")
		}
		last = e.Time
		n++
		if e.Value.Millis > 90 {
			slow++
		}
	}
	t.say("Range 18:15-18:30: %d requests in time order (%d slower than 90 ms), merged from both servers' blobs;", n, slow)
	t.say("%d requests: one listing of the 18:00 prefix, one read per blob", ft.Count())
	return nil
}
