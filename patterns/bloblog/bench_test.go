package bloblog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/tablekit/tablekit/keys"
	"github.com/tablekit/tablekit/patterns/bloblog"
	"github.com/tablekit/tablekit/patterns/tabletest"
)

// The benchmarks compare bloblog with what a careful user writes with
// the SDKs alone, on clients with their defaults.
//
// BenchmarkLogWrite logs entries of about 100 B and 1 KiB of JSON three
// ways, one after another in each iteration: bloblog (a Writer, Append
// for each entry, then Close, which flushes: 1 MiB appends), each entry as
// a table entity (AddEntity of the marshalled struct, PartitionKey the
// hour, RowKey the ticks and a sequence number: the guide's anti-pattern,
// one round trip per entry), and each entry as its own AppendBlock to one
// append blob (unbuffered). The per-entry sides log fewer entries per
// iteration (each costs a round trip); rates are per second of each
// side's own time.
//
// BenchmarkLogRange reads an hour of 100,000 entries of about 100 B
// written by 4 writers: bloblog's Range against a careful user's read of
// the same blobs (list the hour's prefix, download every blob, 8 at a
// time, split the lines, unmarshal each entry, sort by time).

type benchEntry struct {
	Method, Path string
	Status       int
	Agent        string
}

// entryOf returns an entry whose JSON is size bytes.
func entryOf(size int) benchEntry {
	e := benchEntry{Method: "GET", Path: "/api/items", Status: 200}
	b, _ := json.Marshal(e)
	e.Agent = strings.Repeat("a", max(0, size-len(b)))
	return e
}

func BenchmarkLogWrite(b *testing.B) {
	for _, size := range []int{100, 1024} {
		b.Run(fmt.Sprintf("entry=%dB", size), func(b *testing.B) {
			env := tabletest.New(b)
			c := env.Container(nil)
			tc := env.Table(nil)
			l, err := bloblog.New[benchEntry](c, &bloblog.Options{Prefix: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			e := entryOf(size)
			line, _ := json.Marshal(e)
			n, perEntry := 20_000, 400
			if size > 100 {
				n = 5_000
			}
			raw := c.NewAppendBlobClient("raw/unbuffered.log")
			if _, err := raw.Create(ctx, nil); err != nil {
				b.Fatal(err)
			}
			var logT, tableT, appendT time.Duration
			seq := 0
			sides := []func(){
				func() {
					t0 := time.Now()
					w, err := l.NewWriter(nil)
					if err != nil {
						b.Fatal(err)
					}
					for range n {
						if err := w.Append(ctx, e); err != nil {
							b.Fatal(err)
						}
					}
					if err := w.Close(ctx); err != nil {
						b.Fatal(err)
					}
					logT += time.Since(t0)
				},
				func() {
					t0 := time.Now()
					for range perEntry {
						now := time.Now().UTC()
						seq++
						body, err := json.Marshal(struct {
							PartitionKey, RowKey string
							benchEntry
						}{now.Format("2006010215"), keys.Pad(uint64(keys.Ticks(now)), 19) + "_" + keys.Pad(uint64(seq), 10), e})
						if err != nil {
							b.Fatal(err)
						}
						if _, err := tc.AddEntity(ctx, body, nil); err != nil {
							b.Fatal(err)
						}
					}
					tableT += time.Since(t0)
				},
				func() {
					t0 := time.Now()
					for range perEntry {
						data := append(time.Now().UTC().AppendFormat(nil, time.RFC3339Nano), ' ')
						data = append(append(data, line...), '\n')
						if _, err := raw.AppendBlock(ctx, streaming.NopCloser(bytes.NewReader(data)), nil); err != nil {
							b.Fatal(err)
						}
					}
					appendT += time.Since(t0)
				},
			}
			b.ResetTimer()
			for i := range b.N {
				for k := range sides {
					if i%2 == 0 {
						sides[k]()
					} else {
						sides[len(sides)-1-k]()
					}
				}
			}
			rate := func(entries int, d time.Duration) float64 { return float64(entries*b.N) / d.Seconds() }
			b.ReportMetric(rate(n, logT), "bloblog-entries/s")
			b.ReportMetric(rate(perEntry, tableT), "table-entries/s")
			b.ReportMetric(rate(perEntry, appendT), "unbuffered-entries/s")
			b.ReportMetric(rate(n, logT)*float64(len(line))/1e6, "bloblog-MB/s")
			b.ReportMetric(rate(perEntry, tableT)*float64(len(line))/1e6, "table-MB/s")
			b.ReportMetric(rate(perEntry, appendT)*float64(len(line))/1e6, "unbuffered-MB/s")
			b.ReportMetric(rate(n, logT)/rate(perEntry, tableT), "bloblog/table")
			b.ReportMetric(rate(n, logT)/rate(perEntry, appendT), "bloblog/unbuffered")
		})
	}
}

func BenchmarkLogRange(b *testing.B) {
	env := tabletest.New(b)
	c := env.Container(nil)
	l, err := bloblog.New[benchEntry](c, &bloblog.Options{Prefix: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	hour := time.Date(2024, 1, 1, 10, 0, 0, 0, time.UTC)
	const writers, total = 4, 100_000
	e := entryOf(100)
	seed := time.Now()
	for w := range writers {
		i := 0
		wr, err := l.NewWriter(&bloblog.WriterOptions{FlushInterval: -1, Now: func() time.Time {
			i++
			return hour.Add(time.Duration(i*writers+w) * 30 * time.Millisecond) // spread over the hour
		}})
		if err != nil {
			b.Fatal(err)
		}
		for range total / writers {
			if err := wr.Append(ctx, e); err != nil {
				b.Fatal(err)
			}
		}
		if err := wr.Close(ctx); err != nil {
			b.Fatal(err)
		}
	}
	seeded := time.Since(seed)
	var logT, rawT time.Duration
	readLog := func() {
		t0 := time.Now()
		n := 0
		for _, err := range l.Range(ctx, hour, hour.Add(time.Hour)) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		logT += time.Since(t0)
		if n != total {
			b.Fatalf("Range: %d entries", n)
		}
	}
	readRaw := func() {
		t0 := time.Now()
		all, err := rawRange(ctx, c, "bench/2024/01/01/1000/")
		rawT += time.Since(t0)
		if err != nil || len(all) != total {
			b.Fatal(len(all), err)
		}
	}
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 0 {
			readLog()
			readRaw()
		} else {
			readRaw()
			readLog()
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(logT.Milliseconds())/n, "range-ms/op")
	b.ReportMetric(float64(rawT.Milliseconds())/n, "raw-ms/op")
	b.ReportMetric(total*n/logT.Seconds(), "range-entries/s")
	b.ReportMetric(float64(rawT)/float64(logT), "raw/range")
	b.ReportMetric(seeded.Seconds(), "seed-s")
}

type rawLine struct {
	t time.Time
	e benchEntry
}

// rawRange is the careful user's read of an hour: list, download 8 at a
// time, parse, sort.
func rawRange(ctx context.Context, c *container.Client, prefix string) ([]rawLine, error) {
	var names []string
	pager := c.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &prefix})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, it := range page.Segment.BlobItems {
			names = append(names, *it.Name)
		}
	}
	type result struct {
		lines []rawLine
		err   error
	}
	results := make([]chan result, len(names))
	sem := make(chan struct{}, 8)
	for i, name := range names {
		results[i] = make(chan result, 1)
		go func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			resp, err := c.NewBlobClient(name).DownloadStream(ctx, nil)
			if err != nil {
				results[i] <- result{err: err}
				return
			}
			data, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				results[i] <- result{err: err}
				return
			}
			var out []rawLine
			for _, ln := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
				ts, payload, _ := bytes.Cut(ln, []byte(" "))
				t, err := time.Parse(time.RFC3339Nano, string(ts))
				if err != nil {
					results[i] <- result{err: err}
					return
				}
				var e benchEntry
				if err := json.Unmarshal(payload, &e); err != nil {
					results[i] <- result{err: err}
					return
				}
				out = append(out, rawLine{t, e})
			}
			results[i] <- result{lines: out}
		}()
	}
	var all []rawLine
	for _, ch := range results {
		r := <-ch
		if r.err != nil {
			return nil, r.err
		}
		all = append(all, r.lines...)
	}
	slices.SortStableFunc(all, func(a, b rawLine) int { return a.t.Compare(b.t) })
	return all, nil
}
