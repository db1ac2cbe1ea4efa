package bloblog_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/tablekit/tablekit/patterns/bloblog"
	"github.com/tablekit/tablekit/patterns/tabletest"
	"github.com/tablekit/tablekit/retry"
)

// The guide's example: an hour of request logs in a blob named for the
// hour, as Storage Analytics keeps them, read back for a time range. The
// writer's clock is fixed here so that the output is; by default it is
// time.Now.
func Example() {
	cs, err := tabletest.ConnectionString()
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	o := &azblob.ClientOptions{}
	retry.Default.ApplyTo(&o.ClientOptions)
	svc, err := azblob.NewClientFromConnectionString(cs, o)
	if err != nil {
		log.Fatal(err)
	}
	name := fmt.Sprintf("logs%d", time.Now().UnixNano())
	if _, err := svc.CreateContainer(ctx, name, nil); err != nil {
		log.Fatal(err)
	}
	defer func() { _, _ = svc.DeleteContainer(ctx, name, nil) }()

	type Request struct {
		Method, Path string
		Status       int
	}
	requests, err := bloblog.New[Request](svc.ServiceClient().NewContainerClient(name), &bloblog.Options{Prefix: "web"})
	if err != nil {
		log.Fatal(err)
	}
	at := time.Date(2014, 7, 31, 18, 0, 0, 0, time.UTC)
	w, err := requests.NewWriter(&bloblog.WriterOptions{ID: "web1", Now: func() time.Time { return at }})
	if err != nil {
		log.Fatal(err)
	}
	for i, path := range []string{"/", "/cart", "/checkout", "/", "/help"} {
		at = at.Add(time.Duration(i) * 5 * time.Minute) // 18:00, 18:05, 18:15, 18:30, 18:50
		if err := w.Append(ctx, Request{"GET", path, 200}); err != nil {
			log.Fatal(err)
		}
	}
	if err := w.Close(ctx); err != nil { // flushes: one append
		log.Fatal(err)
	}
	from := time.Date(2014, 7, 31, 18, 5, 0, 0, time.UTC)
	for e, err := range requests.Range(ctx, from, from.Add(30*time.Minute)) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(e.Time.Format("15:04"), e.Value.Method, e.Value.Path, "in", e.Blob)
	}
	// Output:
	// 18:05 GET /cart in web/2014/07/31/1800/web1-000001.log
	// 18:15 GET /checkout in web/2014/07/31/1800/web1-000001.log
	// 18:30 GET / in web/2014/07/31/1800/web1-000001.log
}
