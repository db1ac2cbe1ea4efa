package retry_test

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tablekit/tablekit/retry"
)

// The contention model: clients each make one optimistic-concurrency update
// of the same hot entity. An attempt reads the entity (and its ETag) and
// writes it back one round trip later; the write fails with 412 when another
// client's write committed in between. After a failure the client waits
// Delay(attempt) and starts over. The simulation runs in virtual time, so it
// is deterministic for a seed and takes milliseconds.

const roundTrip = 5 * time.Millisecond

type simEvent struct {
	at      time.Duration
	client  int
	attempt int
	readAt  time.Duration // when this attempt read the entity; -1 before the read
}

type simQueue []simEvent

func (q simQueue) Len() int           { return len(q) }
func (q simQueue) Less(i, j int) bool { return q[i].at < q[j].at }
func (q simQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)        { *q = append(*q, x.(simEvent)) }
func (q *simQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// simulate returns the attempts made and the virtual time until every
// client's update committed.
func simulate(p retry.Policy, clients int, seed uint64) (attempts int, drain time.Duration) {
	r := rand.New(rand.NewPCG(seed, 99))
	p.Rand = r.Float64
	q := &simQueue{}
	for c := 0; c < clients; c++ {
		heap.Push(q, simEvent{at: time.Duration(r.Int64N(int64(roundTrip))), client: c, attempt: 1, readAt: -1})
	}
	lastCommit := time.Duration(-1)
	for q.Len() > 0 {
		e := heap.Pop(q).(simEvent)
		if e.readAt < 0 { // the read: the write arrives one round trip later
			attempts++
			e.readAt, e.at = e.at, e.at+roundTrip
			heap.Push(q, e)
			continue
		}
		if lastCommit < e.readAt { // nobody committed since the read: success
			lastCommit, drain = e.at, e.at
			continue
		}
		heap.Push(q, simEvent{at: e.at + p.Delay(e.attempt), client: e.client, attempt: e.attempt + 1, readAt: -1})
	}
	return attempts, drain
}

func contentionPolicies() map[string]retry.Policy {
	guide, full := retry.Default, retry.Default
	guide.MaxRetries, full.MaxRetries = 1000, 1000
	full.FullJitter = true
	return map[string]retry.Policy{"guide": guide, "full": full}
}

func TestContentionSimulationDrains(t *testing.T) {
	for name, p := range contentionPolicies() {
		for _, clients := range []int{1, 10, 50} {
			attempts, drain := simulate(p, clients, 1)
			if attempts < clients || drain <= 0 {
				t.Fatalf("%s, %d clients: %d attempts, drained at %v", name, clients, attempts, drain)
			}
			if clients == 1 && attempts != 1 {
				t.Fatalf("%s: a lone client needed %d attempts", name, attempts)
			}
		}
	}
}

// BenchmarkContention reports, per policy and number of contending clients,
// the mean attempts per client and the virtual time until all updates
// committed. Run: go test -run '^$' -bench Contention ./retry
func BenchmarkContention(b *testing.B) {
	for _, clients := range []int{10, 50, 200} {
		for _, name := range []string{"guide", "full"} {
			p := contentionPolicies()[name]
			b.Run(fmt.Sprintf("%s/clients=%d", name, clients), func(b *testing.B) {
				const seeds = 20
				var attempts int
				var drain time.Duration
				for i := 0; i < b.N; i++ {
					attempts, drain = 0, 0
					for s := uint64(0); s < seeds; s++ {
						a, d := simulate(p, clients, s)
						attempts, drain = attempts+a, drain+d
					}
				}
				b.ReportMetric(float64(attempts)/seeds/float64(clients), "attempts/client")
				b.ReportMetric(float64(drain/seeds)/float64(time.Millisecond), "drain-ms")
			})
		}
	}
}
