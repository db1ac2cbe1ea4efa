package tabletest_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

// What the package documentation says about key lengths on Azurite: more
// than 512 UTF-16 code units in PartitionKey or RowKey is 400 InvalidInput
// (the real service allows 1,024 characters).
func TestAzuriteKeyLengthLimit(t *testing.T) {
	if isRealAccount() {
		t.Skip("checks the emulator's limit; a real account allows 1,024 characters")
	}
	t.Parallel()
	env := tabletest.New(t)
	c := env.Table(nil)
	ctx := context.Background()
	add := func(pk, rk string) error {
		body, err := json.Marshal(map[string]string{"PartitionKey": pk, "RowKey": rk})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.AddEntity(ctx, body, nil)
		return err
	}
	for _, k := range []struct {
		name string
		key  string
		ok   bool
	}{
		{"512 ASCII", strings.Repeat("a", 512), true},
		{"512 é (1,024 UTF-8 bytes)", strings.Repeat("é", 512), true},
		{"513 ASCII", strings.Repeat("b", 513), false},
		{"257 emoji (514 UTF-16 code units)", strings.Repeat("😀", 257), false},
		{"256 emoji (512 UTF-16 code units)", strings.Repeat("😀", 256), true},
	} {
		for _, where := range []string{"PartitionKey", "RowKey"} {
			pk, rk := "p", "r"
			if where == "PartitionKey" {
				pk = k.key
			} else {
				rk = k.key
			}
			err := add(pk, rk)
			var re *azcore.ResponseError
			switch {
			case k.ok && err != nil:
				t.Errorf("%s of %s: %v, want it accepted", where, k.name, err)
			case !k.ok && !(errors.As(err, &re) && re.StatusCode == 400 && re.ErrorCode == "InvalidInput"):
				t.Errorf("%s of %s: err = %v, want 400 InvalidInput", where, k.name, err)
			}
			if err == nil { // free the key for the next case
				if _, err := c.DeleteEntity(ctx, pk, rk, nil); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// ScratchTable makes a fresh, usable table and its cleanup deletes it.
func TestScratchTable(t *testing.T) {
	tabletest.New(t) // skips or fails as every test that needs storage does
	ctx := context.Background()
	a, cleanA, err := tabletest.ScratchTable(ctx, "scratch")
	if err != nil {
		t.Fatal(err)
	}
	b, cleanB, err := tabletest.ScratchTable(ctx, "scratch")
	if err != nil {
		t.Fatal(err)
	}
	defer cleanB()
	if _, err := a.AddEntity(ctx, []byte(`{"PartitionKey":"p","RowKey":"r"}`), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := b.GetEntity(ctx, "p", "r", nil); err == nil {
		t.Fatal("two scratch tables share a name")
	}
	cleanA()
	if _, err := a.GetEntity(ctx, "p", "r", nil); err == nil {
		t.Fatal("the table outlived its cleanup")
	}
}

// ScratchQueue and ScratchContainer make fresh, usable resources.
func TestScratchQueueAndContainer(t *testing.T) {
	tabletest.New(t)
	ctx := context.Background()
	q, cleanQ, err := tabletest.ScratchQueue(ctx, "scratch")
	if err != nil {
		t.Fatal(err)
	}
	defer cleanQ()
	if _, err := q.EnqueueMessage(ctx, "hi", nil); err != nil {
		t.Fatal(err)
	}
	c, cleanC, err := tabletest.ScratchContainer(ctx, "scratch")
	if err != nil {
		t.Fatal(err)
	}
	defer cleanC()
	if _, err := c.NewBlockBlobClient("b").UploadBuffer(ctx, []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
}
