package tabletest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tablekit/tablekit/internal/emulator"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

// TestCosmosAccountQueuesAndBlobs: when AZURE_STORAGE_CONNECTION_STRING
// names a Cosmos DB Table API account (tables only), queues and blobs come
// from the Storage account of TABLEKIT_STORAGE_CONNECTION_STRING, and
// without it the tests that need them skip (nothing is sent either way).
func TestCosmosAccountQueuesAndBlobs(t *testing.T) {
	t.Setenv(emulator.ConnectionStringEnv, "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;TableEndpoint=https://acct.table.cosmos.azure.com:443/;")
	t.Setenv(emulator.StorageConnectionStringEnv, "")
	for _, what := range []string{"queues", "blobs"} {
		skipped := false
		t.Run(what, func(t *testing.T) {
			defer func() { skipped = t.Skipped() }()
			e := tabletest.New(t)
			if what == "queues" {
				e.QueueService(nil)
			} else {
				e.BlobService(nil)
			}
		})
		if !skipped {
			t.Fatalf("%s of a Cosmos DB account without %s: not skipped", what, emulator.StorageConnectionStringEnv)
		}
	}
	// The examples' scratch queues and containers: a clear error, not a
	// request to an endpoint the Cosmos DB account does not have.
	if _, _, err := tabletest.ScratchQueue(context.Background(), "q"); err == nil || !strings.Contains(err.Error(), emulator.StorageConnectionStringEnv) {
		t.Fatalf("ScratchQueue of a Cosmos DB account without %s: %v", emulator.StorageConnectionStringEnv, err)
	}
	if _, _, err := tabletest.ScratchContainer(context.Background(), "c"); err == nil || !strings.Contains(err.Error(), emulator.StorageConnectionStringEnv) {
		t.Fatalf("ScratchContainer of a Cosmos DB account without %s: %v", emulator.StorageConnectionStringEnv, err)
	}
	t.Setenv(emulator.StorageConnectionStringEnv, "DefaultEndpointsProtocol=https;AccountName=store;AccountKey=a2V5;QueueEndpoint=https://store.queue.core.windows.net/;BlobEndpoint=https://store.blob.core.windows.net/")
	e := tabletest.New(t)
	if u := e.QueueService(nil).URL(); !strings.Contains(u, "store.queue.core.windows.net") {
		t.Fatalf("queue service %s, want the Storage account's", u)
	}
	if u := e.BlobService(nil).URL(); !strings.Contains(u, "store.blob.core.windows.net") {
		t.Fatalf("blob service %s, want the Storage account's", u)
	}
}
