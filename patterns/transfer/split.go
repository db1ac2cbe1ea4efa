package transfer

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/tablekit/tablekit/patterns/table"
)

// probeAlphabet are the first characters of the candidate PartitionKey
// boundaries a split probes: the printable ASCII characters keys may hold,
// and one boundary past them for every other character.
func probeAlphabet() []string {
	var a []string
	for c := byte(' '); c <= '~'; c++ {
		if c == '#' || c == '/' || c == '?' || c == '\\' {
			continue // never in a key
		}
		a = append(a, string(c))
	}
	return append(a, "\u0080")
}

// split divides [from, to) into at most n PartitionKey ranges that each
// hold entities, found by probing candidate boundaries with single-row
// queries (93 for the first character; then, when fewer than n ranges
// hold rows, 93 per first character found, for the second). It works on services that
// return rows in no order too: a probe asks only whether a range holds a
// row. Ranges cover [from, to) together, whatever the probes find.
func split(ctx context.Context, t *table.Table[table.Dynamic], from, to string, since time.Time, n, concurrency int) ([]span, error) {
	whole := []span{{From: from, To: to}}
	if n <= 1 {
		return whole, nil
	}
	bounds := []string{from}
	for level := 0; level < 2; level++ {
		var cands []string
		for i, b := range bounds {
			hi := to
			if i+1 < len(bounds) {
				hi = bounds[i+1]
			}
			cands = append(cands, b)
			for _, c := range probeAlphabet() {
				k := c
				if level == 1 && b != "" {
					k = b[:min(len(b), 1)] + c
				}
				if k > b && (hi == "" || k < hi) {
					cands = append(cands, k)
				}
			}
		}
		slices.Sort(cands)
		cands = slices.Compact(cands)
		full, err := probe(ctx, t, cands, to, since, concurrency)
		if err != nil {
			return nil, err
		}
		bounds = full
		if len(bounds) >= n {
			break
		}
	}
	if len(bounds) <= 1 {
		return whole, nil
	}
	// n groups of consecutive non-empty candidate ranges.
	var out []span
	per := float64(len(bounds)) / float64(min(n, len(bounds)))
	for g := 0; g < min(n, len(bounds)); g++ {
		lo := bounds[int(float64(g)*per)]
		if g == 0 {
			lo = from
		}
		hi := to
		if next := int(float64(g+1) * per); g+1 < min(n, len(bounds)) && next < len(bounds) {
			hi = bounds[next]
		}
		out = append(out, span{From: lo, To: hi})
	}
	return out, nil
}

// probe returns the candidates (sorted) whose range up to the next
// candidate (the last: up to to) holds at least one entity.
func probe(ctx context.Context, t *table.Table[table.Dynamic], cands []string, to string, since time.Time, concurrency int) ([]string, error) {
	full := make([]bool, len(cands))
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		sem   = make(chan struct{}, concurrency)
	)
	for i := range cands {
		hi := to
		if i+1 < len(cands) {
			hi = cands[i+1]
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			q := query(cands[i], hi, since, "")
			q.Select, q.Limit, q.PageSize = []string{"PartitionKey"}, 1, 1
			for _, err := range t.Query(ctx, q) {
				if err != nil {
					mu.Lock()
					if first == nil {
						first = wrap(err, "probing %s", t.Name())
					}
					mu.Unlock()
					return
				}
				full[i] = true
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	var out []string
	for i, f := range full {
		if f {
			out = append(out, cands[i])
		}
	}
	return out, nil
}
