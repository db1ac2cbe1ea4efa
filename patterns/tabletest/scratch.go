package tabletest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/internal/emulator"
	"github.com/tablekit/tablekit/internal/obs"
	"github.com/tablekit/tablekit/internal/redact"
	"github.com/tablekit/tablekit/patterns/table"
	"github.com/tablekit/tablekit/retry"
)

var scratchSeq atomic.Uint64

// ScratchTable creates a table with a fresh name that starts with prefix
// (a letter, then up to 40 letters and digits) in the account
// ConnectionString names, and returns a client of it
// (table.ClientOptions: retry.Default, spans of the requests made under a
// recording span) and a function that deletes it. It is the set-up of a runnable
// example, and of a test outside testing.T's reach:
//
//	logins, cleanup, err := tabletest.ScratchTable(ctx, "logins")
//	if err != nil {
//		log.Fatal(err)
//	}
//	defer cleanup()
func ScratchTable(ctx context.Context, prefix string) (c *aztables.Client, cleanup func(), err error) {
	svc, err := scratchService()
	if err != nil {
		return nil, nil, err
	}
	name := scratchName(prefix)
	if _, err := svc.CreateTable(ctx, name, nil); err != nil {
		var re *azcore.ResponseError
		if !errors.As(err, &re) || re.StatusCode != http.StatusConflict {
			return nil, nil, fmt.Errorf("tabletest: creating table %s: %w", name, redact.Error(err))
		}
	}
	return table.NewClient(svc, name), func() { _, _ = svc.DeleteTable(context.WithoutCancel(ctx), name, nil) }, nil
}

// scratchName is a fresh name that starts with prefix.
func scratchName(prefix string) string {
	return fmt.Sprintf("%s%d%d", prefix, time.Now().UnixNano()%1e12, scratchSeq.Add(1))
}

// storageConnectionString is ConnectionString for queues and blobs
// (what): a Storage account's, from emulator.StorageConnectionStringEnv when
// ConnectionString names a Cosmos DB Table API account, which has
// neither.
func storageConnectionString(what string) (string, error) {
	cs, err := ConnectionString()
	if err != nil || !cosmosTables(cs) {
		return cs, err
	}
	if s := os.Getenv(emulator.StorageConnectionStringEnv); s != "" {
		return s, nil
	}
	return "", fmt.Errorf("tabletest: %s names a Cosmos DB Table API account, which has no %s: set %s to a Storage account's connection string", emulator.ConnectionStringEnv, what, emulator.StorageConnectionStringEnv)
}

// scratchService returns a table service client of the account
// ConnectionString names, built by table.NewServiceClientFromConnectionString
// with table.ClientOptions (retry.Default in place of azcore's retry, and
// spans of the requests made under a recording span).
func scratchService() (*aztables.ServiceClient, error) {
	cs, err := ConnectionString()
	if err != nil {
		return nil, err
	}
	return table.NewServiceClientFromConnectionString(cs, nil)
}

// ScratchQueue creates a queue with a fresh name that starts with prefix
// (lower-case letters and digits) in the account ConnectionString names
// (TABLEKIT_STORAGE_CONNECTION_STRING's when that is a Cosmos DB
// account), and returns a client of it (retry.Default, spans as ScratchTable's)
// and a function that deletes it: the set-up of a runnable example that
// needs a queue.
func ScratchQueue(ctx context.Context, prefix string) (q *azqueue.QueueClient, cleanup func(), err error) {
	cs, err := storageConnectionString("queues")
	if err != nil {
		return nil, nil, err
	}
	o := &azqueue.ClientOptions{}
	retry.Default.ApplyTo(&o.ClientOptions)
	o.TracingProvider = obs.TracingProvider()
	svc, err := azqueue.NewServiceClientFromConnectionString(cs, o)
	if err != nil {
		return nil, nil, err
	}
	q = svc.NewQueueClient(scratchName(prefix))
	if _, err := q.Create(ctx, nil); err != nil {
		return nil, nil, fmt.Errorf("tabletest: creating a queue: %w", redact.Error(err))
	}
	return q, func() { _, _ = q.Delete(context.WithoutCancel(ctx), nil) }, nil
}

// ScratchContainer creates a blob container with a fresh name that starts
// with prefix (lower-case letters and digits) in the account
// ConnectionString names (TABLEKIT_STORAGE_CONNECTION_STRING's when that is
// a Cosmos DB account), and returns a client of it (retry.Default, spans
// as ScratchTable's) and a function that deletes it: the set-up of a
// runnable example that needs blobs.
func ScratchContainer(ctx context.Context, prefix string) (c *container.Client, cleanup func(), err error) {
	cs, err := storageConnectionString("blobs")
	if err != nil {
		return nil, nil, err
	}
	o := &azblob.ClientOptions{}
	retry.Default.ApplyTo(&o.ClientOptions)
	o.TracingProvider = obs.TracingProvider()
	svc, err := azblob.NewClientFromConnectionString(cs, o)
	if err != nil {
		return nil, nil, err
	}
	c = svc.ServiceClient().NewContainerClient(scratchName(prefix))
	if _, err := c.Create(ctx, nil); err != nil {
		return nil, nil, fmt.Errorf("tabletest: creating a container: %w", redact.Error(err))
	}
	return c, func() { _, _ = c.Delete(context.WithoutCancel(ctx), nil) }, nil
}
