// Package hostile plants, with raw SDK clients, the rows, blobs and
// messages that a writer outside tablekit can put where tablekit's
// patterns read: a tenant holding a table SAS scoped to its own partitions
// (table.SASURL), a writer of a blob container, a writer of a queue. Each
// function writes one artifact that issue 21 names (a secondaryindex copy
// naming another partition's primary, a largeentity pointer naming a
// foreign blob, an indexentity list, a row under reserved.Prefix, a
// forged eventual envelope) and checks nothing: package table's refusals
// of reserved keys and properties do not apply to these clients, as they
// do not to an attacker's.
//
// It is for tests only: the hostile-storage model tests (this package's
// tests) and any pattern's trust test import it instead of planting rows
// with ad hoc helpers. Azurite does not enforce the key ranges of a
// table SAS, so tests plant with account clients and keep to the
// partitions the attacker's SAS would grant. Its functions are safe for
// concurrent use. This package's tests also hold the black-box tests that
// run every pattern's operations over failing storage: no signature in
// errors, logs or telemetry (nosecret_test.go), and no retry loop spending
// the client pipeline's budget more than once (budget_test.go).
package hostile

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/tablekit/tablekit/internal/reserved"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/indexentity"
	"github.com/tablekit/tablekit/patterns/largeentity"
	"github.com/tablekit/tablekit/patterns/secondaryindex"
)

// Row writes row (pk, rk) with props merged into whatever the row holds
// (the row is created when absent), as a raw aztables client does: any
// keys, those under reserved.Prefix included, and any property names
// and values (strings, bools and numbers; "Name@odata.type" annotations
// give other EDM types).
func Row(ctx context.Context, c *aztables.Client, pk, rk string, props map[string]any) error {
	m := map[string]any{"PartitionKey": pk, "RowKey": rk}
	for k, v := range props {
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("hostile: row (%s, %s): %w", pk, rk, err)
	}
	_, err = c.UpsertEntity(ctx, b, &aztables.UpsertEntityOptions{UpdateMode: aztables.UpdateModeMerge})
	return err
}

// Copy plants a secondaryindex copy: row (pk, rk) whose
// secondaryindex.RefProperty names primary (refPK, refID), as
// keys.Join(refPK, refID), with extra merged in (fields its index does
// not copy, a sealed field in plaintext). A ref that is not two parts is
// given by refPK alone with refID "" (garbage references).
func Copy(ctx context.Context, c *aztables.Client, pk, rk, refPK, refID string, extra map[string]any) error {
	ref := refPK
	if refID != "" {
		ref = keys.Join(refPK, refID)
	}
	props := map[string]any{secondaryindex.RefProperty: ref}
	for k, v := range extra {
		props[k] = v
	}
	return Row(ctx, c, pk, rk, props)
}

// Pointer plants a largeentity pointer: property
// largeentity.PointerPrefix + property of row (pk, rk) set to
// {"blob":name,"size":size,"sha256":sum}, naming any blob (another
// entity's, one outside the Store's Prefix) with any declared size.
func Pointer(ctx context.Context, c *aztables.Client, pk, rk, property, name string, size int64, sum string) error {
	p, err := json.Marshal(largeentity.Blob{Name: name, Size: size, SHA256: sum})
	if err != nil {
		return err
	}
	return Row(ctx, c, pk, rk, map[string]any{largeentity.PointerPrefix + property: string(p)})
}

// IndexList plants an indexentity index entity: row (pk, rk) whose list
// property indexentity.ListProperty+"00" holds ids, each followed by '/'
// (ids of other partitions, reserved keys, text that is no id). Use
// keys.Join(indexentity.KeyPrefix, name, value) as rk for the
// same-partition store.
func IndexList(ctx context.Context, c *aztables.Client, pk, rk string, ids []string) error {
	return Row(ctx, c, pk, rk, map[string]any{indexentity.ListProperty + "00": list(ids, "/")})
}

// ListBlob plants an indexentity list blob: ids one per line, in blob
// name (keys.Join(index name, value) for the blob store).
func ListBlob(ctx context.Context, c *container.Client, name string, ids []string) error {
	return Blob(ctx, c, name, []byte(list(ids, "\n")))
}

func list(ids []string, sep string) string {
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(id)
		b.WriteString(sep)
	}
	return b.String()
}

// Blob uploads content as blob name, replacing any blob there.
func Blob(ctx context.Context, c *container.Client, name string, content []byte) error {
	_, err := c.NewBlockBlobClient(name).UploadBuffer(ctx, content, nil)
	return err
}

// ReadBlob returns blob name's content, for asserting that a blob is still
// there, unchanged.
func ReadBlob(ctx context.Context, c *container.Client, name string) ([]byte, error) {
	resp, err := c.NewBlobClient(name).DownloadStream(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, err = b.ReadFrom(resp.Body)
	return b.Bytes(), err
}

// Message enqueues text as it is (garbage, or a text longer than an
// envelope can be), visible at once, and returns the message's id (which
// a forged commit record may name).
func Message(ctx context.Context, q *azqueue.QueueClient, text string) (string, error) {
	resp, err := q.EnqueueMessage(ctx, text, nil)
	if err != nil {
		return "", err
	}
	if len(resp.Messages) != 1 || resp.Messages[0].MessageID == nil {
		return "", fmt.Errorf("hostile: the enqueue returned no message id")
	}
	return *resp.Messages[0].MessageID, nil
}

// Envelope is the JSON of an eventual intent's message (base64 on the
// queue) as a queue writer forges it: the field names of eventual's
// version 1 envelope, any values.
type Envelope struct {
	V       int             `json:"v"`
	ID      string          `json:"id"`
	Kind    string          `json:"k"`
	Created time.Time       `json:"t"`
	Payload json.RawMessage `json:"p,omitempty"`
	// Blob names the claim check (see ClaimCheck).
	Blob string `json:"b,omitempty"`
	// Commit names the intent's commit record.
	Commit *CommitRef `json:"c,omitempty"`
	// Released claims that Commit's batch applied.
	Released  bool   `json:"r,omitempty"`
	LastError string `json:"e,omitempty"`
	Abandoned int64  `json:"a,omitempty"`
	// TP and TS are the W3C traceparent and tracestate the delivery's span
	// is to join.
	TP string `json:"tp,omitempty"`
	TS string `json:"ts,omitempty"`
}

// CommitRef is an Envelope's commit reference: the table (by name) and
// partition of the intent's commit record.
type CommitRef struct {
	Table        string `json:"t"`
	PartitionKey string `json:"pk"`
}

// Forge enqueues e as an intent's message, visible at once, and returns
// the message's id.
func Forge(ctx context.Context, q *azqueue.QueueClient, e Envelope) (string, error) {
	raw, err := json.Marshal(e)
	if err != nil {
		return "", err
	}
	return Message(ctx, q, base64.StdEncoding.EncodeToString(raw))
}

// CommitRecord plants the commit record of intent id in partition pk:
// RowKey reserved.Prefix + "intent~" + id, with kind, state
// ("committed", "aborted", "poisoned" or anything) and the id of the
// message it names.
func CommitRecord(ctx context.Context, c *aztables.Client, pk, id, kind, state, message string) error {
	return Row(ctx, c, pk, reserved.Prefix+"intent~"+id, map[string]any{
		"Kind": kind, "State": state, "Message": message,
		"Created": time.Now().UTC().Format(time.RFC3339Nano), "Created@odata.type": "Edm.DateTime",
	})
}

// ClaimCheck returns a claim-check name of intent id as a Queue writes it
// (eventual.Options.Blobs): intents/<id>/<32 hex digits>, with "commit-"
// before the digits for a Commit's intent.
func ClaimCheck(id string, commit bool) string {
	mark := ""
	if commit {
		mark = "commit-"
	}
	return "intents/" + id + "/" + mark + ID()
}

// ID returns 32 random lower-case hex digits: an intent id, a claim
// check's suffix, a largeentity blob id.
func ID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
