package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azqueue"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/eventual"
	"github.com/tablekit/tablekit/patterns/tabletest"
	"github.com/tablekit/tablekit/retry"
)

// The directory's writes against the aztables, azblob and azqueue
// sequence a careful user writes by hand for the same rows, blobs and
// messages, one operation of each side in turn (the order reversed every
// other iteration), both sequential: equal concurrency. Each side has its
// own table, queue and container, and counts its requests.
//
//	go test -run '^$' -bench Directory -benchtime 100x -count 3 ./examples/directory

// counter counts the requests of one side's clients, but for dequeues,
// whose number depends on the workers' polling.
type counter struct{ n atomic.Int64 }

func (c *counter) Do(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || !strings.HasSuffix(req.URL.Path, "/messages") {
		c.n.Add(1)
	}
	return http.DefaultClient.Do(req)
}

// benchSide is one side of a comparison: its operation and its requests.
type benchSide struct {
	name  string
	op    func(ctx context.Context, i int) error
	trips *counter
}

// compare runs b.N operations of each side, alternating, and reports each
// side's operations per second and requests per operation, and the speed
// ratio tablekit/raw.
func compare(b *testing.B, sides [2]benchSide) {
	ctx := context.Background()
	var took [2]time.Duration
	var trips [2]int64
	b.ResetTimer()
	for i := range b.N {
		for j := range 2 {
			k := j
			if i%2 == 1 {
				k = 1 - j
			}
			s := sides[k]
			n0, t0 := s.trips.n.Load(), time.Now()
			if err := s.op(ctx, i); err != nil {
				b.Fatalf("%s %d: %v", s.name, i, err)
			}
			took[k] += time.Since(t0)
			trips[k] += s.trips.n.Load() - n0
		}
	}
	b.StopTimer()
	for k, s := range sides {
		b.ReportMetric(float64(b.N)/took[k].Seconds(), s.name+"-entities/s")
		b.ReportMetric(float64(trips[k])/float64(b.N), s.name+"-trips/op")
	}
	b.ReportMetric(took[1].Seconds()/took[0].Seconds(), sides[0].name+"/"+sides[1].name)
}

// benchEnv is one side's storage, its clients counting their requests.
type benchEnv struct {
	trips   counter
	table   *aztables.Client
	queue   *azqueue.QueueClient
	poison  *azqueue.QueueClient
	photos  *container.Client
	offices *aztables.Client
}

func newBenchEnv(b *testing.B, env *tabletest.Env, tablekit bool) *benchEnv {
	e := &benchEnv{}
	var to aztables.ClientOptions
	var qo azqueue.ClientOptions
	var bo azblob.ClientOptions
	to.Transport, qo.Transport, bo.Transport = &e.trips, &e.trips, &e.trips
	if tablekit {
		// tablekit's clients: its retry policy in place of azcore's.
		retry.Default.ApplyTo(&to.ClientOptions)
		retry.Default.ApplyTo(&qo.ClientOptions)
		retry.Default.ApplyTo(&bo.ClientOptions)
	}
	e.table, e.offices = env.Table(&to), env.Table(&to)
	e.queue, e.poison, e.photos = env.Queue(&qo), env.Queue(&qo), env.Container(&bo)
	return e
}

// staffer makes the employees of a benchmark.
func staffer(dept string, i int, photo []byte) Employee {
	id := fmt.Sprintf("%06d", i)
	return Employee{Department: dept, ID: id, FirstName: "Jo", LastName: fmt.Sprint("Jones", i), Email: id + "@contoso.com", Office: "Seattle", Photo: photo}
}

// benchDirectory is the tablekit side: the directory without the office
// index (two same-partition indexes, the change log, the photo), and its
// worker running for moves.
func benchDirectory(b *testing.B, e *benchEnv) (*Directory, chan struct{}) {
	d, err := open(Clients{People: e.table, Queue: e.queue, Poison: e.poison, Photos: e.photos}, 0, false)
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{}, 1)
	w, err := d.Worker(&eventual.WorkerOptions{Concurrency: 1, Idle: &retry.Policy{Default: 5 * time.Millisecond, Max: 5 * time.Millisecond},
		OnEvent: func(ev eventual.Event) {
			if ev.Type == eventual.Processed && ev.Kind == moveOut.Name() {
				done <- struct{}{}
			}
		}})
	if err != nil {
		b.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- w.Run(ctx) }()
	b.Cleanup(func() {
		stop()
		if err := <-ran; err != nil {
			b.Error(err)
		}
	})
	return d, done
}

// raw is the hand-written side: the same rows, written with aztables'
// SubmitTransaction of marshalled maps, the photo with azblob, the end of
// a move with a queue message, an outbox row and a worker loop of its own.
type raw struct {
	*benchEnv
	done chan struct{}
}

// rawRows are an employee's rows as a careful user lays them out: the
// employee under "empid!<id>" with the photo's blob name, size and
// SHA-256 in its place, a unique email copy and a last-name copy naming it.
func rawRows(e Employee, blobName string, photo []byte) (employee, email, last map[string]any) {
	sum := sha256.Sum256(photo)
	pk := e.Department
	ref := keys.Join(pk, e.ID)
	employee = map[string]any{"PartitionKey": pk, "RowKey": keys.Join("empid", e.ID), "FirstName": e.FirstName, "LastName": e.LastName, "Email": e.Email, "Office": e.Office,
		"PhotoBlob": blobName, "PhotoSize": fmt.Sprint(len(photo)), "PhotoSize@odata.type": "Edm.Int64", "PhotoSHA256": hex.EncodeToString(sum[:])}
	email = map[string]any{"PartitionKey": pk, "RowKey": keys.Join("email", e.Email), "FirstName": e.FirstName, "LastName": e.LastName, "Office": e.Office, "Ref": ref}
	last = map[string]any{"PartitionKey": pk, "RowKey": keys.Join("lastname", e.LastName, e.FirstName, e.ID), "FirstName": e.FirstName, "LastName": e.LastName, "Email": e.Email, "Ref": ref}
	return employee, email, last
}

// rawLog is a change-log entry's row: newest first, unique per writer.
func rawLog(pk, id, what string) map[string]any {
	var r [8]byte
	_, _ = rand.Read(r[:])
	return map[string]any{"PartitionKey": pk, "RowKey": "log!" + keys.InvertedTicks(time.Now()) + "-" + hex.EncodeToString(r[:]), "Employee": id, "What": what}
}

func action(kind aztables.TransactionType, m map[string]any, etag *azcore.ETag) aztables.TransactionAction {
	body, _ := json.Marshal(m)
	return aztables.TransactionAction{ActionType: kind, Entity: body, IfMatch: etag}
}

func keysOnly(pk, rk string) map[string]any { return map[string]any{"PartitionKey": pk, "RowKey": rk} }

// upload stores a photo under a new blob name (created only if absent).
func (r *raw) upload(ctx context.Context, e Employee, photo []byte) (string, error) {
	var id [16]byte
	_, _ = rand.Read(id[:])
	name := fmt.Sprintf("raw/%s/%s/%x", e.Department, e.ID, id)
	_, err := r.photos.NewBlockBlobClient(name).UploadBuffer(ctx, photo, &blockblob.UploadBufferOptions{
		AccessConditions: &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: ptr(azcore.ETagAny)}}})
	return name, err
}

func ptr[V any](v V) *V { return &v }

// hire: the photo uploaded, then one transaction of the employee, its two
// copies and its log entry.
func (r *raw) hire(ctx context.Context, e Employee) error {
	name, err := r.upload(ctx, e, e.Photo)
	if err != nil {
		return err
	}
	emp, email, last := rawRows(e, name, e.Photo)
	_, err = r.table.SubmitTransaction(ctx, []aztables.TransactionAction{
		action(aztables.TransactionTypeAdd, emp, nil), action(aztables.TransactionTypeAdd, email, nil),
		action(aztables.TransactionTypeAdd, last, nil), action(aztables.TransactionTypeAdd, rawLog(e.Department, e.ID, "hired"), nil),
	}, nil)
	return err
}

// read reads an employee's row.
func (r *raw) read(ctx context.Context, pk, id string) (map[string]any, azcore.ETag, error) {
	resp, err := r.table.GetEntity(ctx, pk, keys.Join("empid", id), nil)
	if err != nil {
		return nil, "", err
	}
	var m map[string]any
	if err := json.Unmarshal(resp.Value, &m); err != nil {
		return nil, "", err
	}
	for k := range m {
		if k == "odata.metadata" || k == "odata.etag" || k == "Timestamp" || k == "Timestamp@odata.type" {
			delete(m, k)
		}
	}
	return m, resp.ETag, nil
}

func str(m map[string]any, k string) string { s, _ := m[k].(string); return s }

// rename: read, then one transaction: the employee replaced If-Match, the
// email copy replaced, the last-name copy moved, a log entry.
func (r *raw) rename(ctx context.Context, pk, id, first, lastName string) error {
	m, etag, err := r.read(ctx, pk, id)
	if err != nil {
		return err
	}
	e := Employee{Department: pk, ID: id, FirstName: first, LastName: lastName, Email: str(m, "Email"), Office: str(m, "Office")}
	oldLast := keys.Join("lastname", str(m, "LastName"), str(m, "FirstName"), id)
	m["FirstName"], m["LastName"] = first, lastName
	_, email, last := rawRows(e, "", nil)
	star := azcore.ETagAny
	_, err = r.table.SubmitTransaction(ctx, []aztables.TransactionAction{
		action(aztables.TransactionTypeUpdateReplace, m, &etag),
		action(aztables.TransactionTypeUpdateReplace, email, &star),
		action(aztables.TransactionTypeDelete, keysOnly(pk, oldLast), &star),
		action(aztables.TransactionTypeAdd, last, nil),
		action(aztables.TransactionTypeAdd, rawLog(pk, id, "renamed"), nil),
	}, nil)
	return err
}

// moveMessage is the raw move's queue message.
type moveMessage struct{ From, To, ID string }

// move: read the employee and its photo, upload the photo under the new
// keys, one transaction in the new department (the employee, its copies,
// a log entry, an outbox row that says the move is unfinished), then a
// message for the worker, which finishes it (finish).
func (r *raw) move(ctx context.Context, pk, id, to string) error {
	m, _, err := r.read(ctx, pk, id)
	if err != nil {
		return err
	}
	dl, err := r.photos.NewBlobClient(str(m, "PhotoBlob")).DownloadStream(ctx, nil)
	if err != nil {
		return err
	}
	photo, err := io.ReadAll(dl.Body)
	dl.Body.Close()
	if err != nil {
		return err
	}
	if sum := sha256.Sum256(photo); hex.EncodeToString(sum[:]) != str(m, "PhotoSHA256") {
		return fmt.Errorf("photo of %s/%s does not match its hash", pk, id)
	}
	e := Employee{Department: to, ID: id, FirstName: str(m, "FirstName"), LastName: str(m, "LastName"), Email: str(m, "Email"), Office: str(m, "Office")}
	name, err := r.upload(ctx, e, photo)
	if err != nil {
		return err
	}
	emp, email, last := rawRows(e, name, photo)
	outbox := map[string]any{"PartitionKey": to, "RowKey": keys.Join("outbox", "move", id), "From": pk}
	if _, err := r.table.SubmitTransaction(ctx, []aztables.TransactionAction{
		action(aztables.TransactionTypeAdd, emp, nil), action(aztables.TransactionTypeAdd, email, nil),
		action(aztables.TransactionTypeAdd, last, nil), action(aztables.TransactionTypeAdd, rawLog(to, id, "moved in from "+pk), nil),
		action(aztables.TransactionTypeAdd, outbox, nil),
	}, nil); err != nil {
		return err
	}
	msg, _ := json.Marshal(moveMessage{From: pk, To: to, ID: id})
	_, err = r.queue.EnqueueMessage(ctx, base64.StdEncoding.EncodeToString(msg), nil)
	return err
}

// work is the raw worker loop: dequeue, finish each move, delete the
// message, until ctx ends.
func (r *raw) work(ctx context.Context) {
	for ctx.Err() == nil {
		resp, err := r.queue.DequeueMessages(ctx, &azqueue.DequeueMessagesOptions{NumberOfMessages: ptr(int32(1)), VisibilityTimeout: ptr(int32(30))})
		if err != nil || len(resp.Messages) == 0 {
			select { // poll an empty queue again after 5 ms, as a hand-written worker would
			case <-ctx.Done():
			case <-time.After(5 * time.Millisecond):
			}
			continue
		}
		for _, msg := range resp.Messages {
			if err := r.finish(ctx, msg); err == nil {
				r.done <- struct{}{}
			}
		}
	}
}

// finish removes a moved employee from the department it left (with its
// copies, and a log entry, in one transaction), then the outbox row and
// the message.
func (r *raw) finish(ctx context.Context, msg *azqueue.DequeuedMessage) error {
	text, err := base64.StdEncoding.DecodeString(*msg.MessageText)
	if err != nil {
		return err
	}
	var mv moveMessage
	if err := json.Unmarshal(text, &mv); err != nil {
		return err
	}
	m, etag, err := r.read(ctx, mv.From, mv.ID)
	if err == nil {
		e := Employee{Department: mv.From, ID: mv.ID, FirstName: str(m, "FirstName"), LastName: str(m, "LastName"), Email: str(m, "Email")}
		_, email, last := rawRows(e, "", nil)
		star := azcore.ETagAny
		if _, err := r.table.SubmitTransaction(ctx, []aztables.TransactionAction{
			action(aztables.TransactionTypeDelete, keysOnly(mv.From, str(m, "RowKey")), &etag),
			action(aztables.TransactionTypeDelete, keysOnly(mv.From, str(email, "RowKey")), &star),
			action(aztables.TransactionTypeDelete, keysOnly(mv.From, str(last, "RowKey")), &star),
			action(aztables.TransactionTypeAdd, rawLog(mv.From, mv.ID, "moved to "+mv.To), nil),
		}, nil); err != nil {
			return err
		}
	}
	if _, err := r.table.DeleteEntity(ctx, mv.To, keys.Join("outbox", "move", mv.ID), nil); err != nil {
		return err
	}
	_, err = r.queue.DeleteMessage(ctx, *msg.MessageID, *msg.PopReceipt, nil)
	return err
}

// sides builds the two sides of a directory benchmark, each with n
// employees of Sales hired first (untimed).
func sides(b *testing.B, n int) (*Directory, chan struct{}, *benchEnv, *raw, *benchEnv) {
	env := tabletest.New(b)
	te, re := newBenchEnv(b, env, true), newBenchEnv(b, env, false)
	d, done := benchDirectory(b, te)
	r := &raw{benchEnv: re, done: make(chan struct{}, 1)}
	ctx := context.Background()
	photo := bytes.Repeat([]byte("photo"), 20<<10) // 100 KB
	for i := range n {
		if err := d.Hire(ctx, staffer("Sales", i, photo)); err != nil {
			b.Fatal(err)
		}
		if err := r.hire(ctx, staffer("Sales", i, photo)); err != nil {
			b.Fatal(err)
		}
	}
	return d, done, te, r, re
}

// BenchmarkDirectory compares the directory's writes with the
// hand-written sequences: a hire (a 100 KB photo, the employee, two
// same-partition index copies, a log entry), a rename (the last-name copy
// moved, the email copy refreshed, a log entry) and a department move
// (across partitions: the new row and photo, then a worker removes the
// old row, both with log entries), until the worker has finished.
func BenchmarkDirectory(b *testing.B) {
	photo := bytes.Repeat([]byte("photo"), 20<<10)
	b.Run("hire", func(b *testing.B) {
		d, _, te, r, re := sides(b, 0)
		compare(b, [2]benchSide{
			{"tablekit", func(ctx context.Context, i int) error { return d.Hire(ctx, staffer("Sales", i, photo)) }, &te.trips},
			{"raw", func(ctx context.Context, i int) error { return r.hire(ctx, staffer("Sales", i, photo)) }, &re.trips},
		})
	})
	b.Run("rename", func(b *testing.B) {
		d, _, te, r, re := sides(b, b.N)
		compare(b, [2]benchSide{
			{"tablekit", func(ctx context.Context, i int) error {
				return d.Rename(ctx, "Sales", fmt.Sprintf("%06d", i), "Jo", fmt.Sprint("Smith", i))
			}, &te.trips},
			{"raw", func(ctx context.Context, i int) error {
				return r.rename(ctx, "Sales", fmt.Sprintf("%06d", i), "Jo", fmt.Sprint("Smith", i))
			}, &re.trips},
		})
	})
	b.Run("move", func(b *testing.B) {
		d, done, te, r, re := sides(b, b.N)
		ctx, stop := context.WithCancel(context.Background())
		worked := make(chan struct{})
		go func() { r.work(ctx); close(worked) }()
		b.Cleanup(func() { stop(); <-worked })
		compare(b, [2]benchSide{
			{"tablekit", func(ctx context.Context, i int) error {
				if err := d.Move(ctx, "Sales", fmt.Sprintf("%06d", i), "HR"); err != nil {
					return err
				}
				<-done
				return nil
			}, &te.trips},
			{"raw", func(ctx context.Context, i int) error {
				if err := r.move(ctx, "Sales", fmt.Sprintf("%06d", i), "HR"); err != nil {
					return err
				}
				<-r.done
				return nil
			}, &re.trips},
		})
	})
}

var _ policy.Transporter = (*counter)(nil)
