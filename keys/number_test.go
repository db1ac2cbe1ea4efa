package keys_test

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tablekit/tablekit/keys"
)

// The widths and bounds of the encodings, as .NET and the format define
// them (test oracles, not the package's constants).
const (
	int64Width = 20                  // '0' or '-', then 19 digits
	maxTicks   = 3155378975999999999 // .NET's DateTime.MaxValue.Ticks
)

func TestInt64(t *testing.T) {
	edge := []int64{math.MinInt64, math.MinInt64 + 1, -1e18, -2, -1, 0, 1, 9, 10, 123, 1e18, math.MaxInt64 - 1, math.MaxInt64}
	r := rand.New(rand.NewPCG(9, 10))
	nums := append([]int64{}, edge...)
	for i := 0; i < 20000; i++ {
		nums = append(nums, int64(r.Uint64())>>r.IntN(64))
	}
	for _, n := range nums {
		k := keys.Int64(n)
		if len(k) != int64Width || keys.Validate(k) != nil {
			t.Fatalf("Int64(%d) = %q: want %d valid characters", n, k, int64Width)
		}
		if got, err := keys.ParseInt64(k); err != nil || got != n {
			t.Fatalf("ParseInt64(Int64(%d)) = %d, %v", n, got, err)
		}
	}
	for i := 1; i < len(nums); i++ {
		a, b := nums[i-1], nums[i]
		if (a < b) != (keys.Int64(a) < keys.Int64(b)) || (a == b) != (keys.Int64(a) == keys.Int64(b)) {
			t.Fatalf("order: %d vs %d but %q vs %q", a, b, keys.Int64(a), keys.Int64(b))
		}
	}
	if got := keys.Int64(123); got != "00000000000000000123" {
		t.Errorf("Int64(123) = %q", got)
	}
	for _, bad := range []string{"", "123", "1000000000000000000000", "09999999999999999999", "-99999999999999999999", "+0000000000000000001", "0000000000000000000x"} {
		if _, err := keys.ParseInt64(bad); !errors.Is(err, keys.ErrInvalidKey) {
			t.Errorf("ParseInt64(%q) = %v, want ErrInvalidKey", bad, err)
		}
	}
}

func TestPad(t *testing.T) {
	tests := []struct {
		n     uint64
		width int
		want  string
	}{
		{123, 8, "00000123"},
		{223, 6, "000223"},
		{0, 1, "0"},
		{99, 2, "99"},
		{math.MaxUint64, 20, "18446744073709551615"},
		{7, 25, "0000000000000000000000007"},
	}
	for _, tt := range tests {
		got := keys.Pad(tt.n, tt.width)
		if got != tt.want {
			t.Errorf("Pad(%d, %d) = %q, want %q", tt.n, tt.width, got, tt.want)
		}
		if back, err := keys.ParsePad(got, tt.width); err != nil || back != tt.n {
			t.Errorf("ParsePad(%q) = %d, %v", got, back, err)
		}
	}
	for _, tt := range []struct {
		n     uint64
		width int
	}{{100, 2}, {1, 0}, {0, -1}} {
		func() {
			defer func() {
				msg, _ := recover().(string)
				if !strings.Contains(msg, "does not fit") {
					t.Errorf("Pad(%d, %d) recovered %q, want a panic saying it does not fit", tt.n, tt.width, msg)
				}
			}()
			keys.Pad(tt.n, tt.width)
		}()
	}
	if _, err := keys.ParsePad("12a", 3); !errors.Is(err, keys.ErrInvalidKey) {
		t.Errorf("ParsePad(12a) = %v", err)
	}
}

// dotnetTicks is an independent computation of DateTime.Ticks from the
// calendar: days since 0001-01-01 in the proleptic Gregorian calendar.
func dotnetTicks(t time.Time) int64 {
	t = t.UTC()
	y := int64(t.Year() - 1)
	days := y*365 + y/4 - y/100 + y/400 + int64(t.YearDay()-1)
	sec := days*86400 + int64(t.Hour()*3600+t.Minute()*60+t.Second())
	return sec*10_000_000 + int64(t.Nanosecond()/100)
}

func TestTicks(t *testing.T) {
	known := []struct {
		t     time.Time
		ticks int64
	}{
		{time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), 0},
		{time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC), 621355968000000000},
		{time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), 630822816000000000},
		{time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC), maxTicks},
		{time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.FixedZone("+02", 7200)), 638505688891234567},
	}
	for _, k := range known {
		if got := keys.Ticks(k.t); got != k.ticks {
			t.Errorf("Ticks(%v) = %d, want %d", k.t, got, k.ticks)
		}
		if got := keys.FromTicks(k.ticks); !got.Equal(k.t.Truncate(100)) || got.Location() != time.UTC {
			t.Errorf("FromTicks(%d) = %v, want %v UTC", k.ticks, got, k.t)
		}
	}
	r := rand.New(rand.NewPCG(11, 12))
	var prev time.Time
	prevKey := ""
	for i := 0; i < 20000; i++ {
		tm := keys.FromTicks(r.Int64N(maxTicks + 1)).Add(time.Duration(r.IntN(100)))
		if got, want := keys.Ticks(tm), dotnetTicks(tm); got != want {
			t.Fatalf("Ticks(%v) = %d, want %d", tm, got, want)
		}
		inv := keys.InvertedTicks(tm)
		if want := fmt.Sprintf("%019d", maxTicks-dotnetTicks(tm)); inv != want {
			t.Fatalf("InvertedTicks(%v) = %q, want %q", tm, inv, want)
		}
		back, err := keys.ParseInvertedTicks(inv)
		if err != nil || !back.Equal(tm.Truncate(100)) {
			t.Fatalf("ParseInvertedTicks(%q) = %v, %v; want %v", inv, back, err, tm.Truncate(100))
		}
		if i > 0 && tm.Truncate(100).After(prev.Truncate(100)) != (inv < prevKey) {
			t.Fatalf("newer must sort first: %v %q vs %v %q", tm, inv, prev, prevKey)
		}
		prev, prevKey = tm, inv
	}
	if got := keys.InvertedTicks(time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)); got != "0000000000000000000" {
		t.Errorf("InvertedTicks(max) = %q", got)
	}
	for _, bad := range []string{"", "123", "315537897599999999a", "3155378976000000000", "99999999999999999999"} {
		if _, err := keys.ParseInvertedTicks(bad); !errors.Is(err, keys.ErrInvalidKey) {
			t.Errorf("ParseInvertedTicks(%q) = %v, want ErrInvalidKey", bad, err)
		}
	}
	for _, out := range []time.Time{time.Date(0, 12, 31, 23, 59, 59, 0, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)} {
		func() {
			defer func() {
				if msg, _ := recover().(string); !strings.Contains(msg, "outside the .NET DateTime range") {
					t.Errorf("InvertedTicks(%v) recovered %q, want a range panic", out, msg)
				}
			}()
			keys.InvertedTicks(out)
		}()
	}
}

func TestBucketStable(t *testing.T) {
	// An independent computation: hash/fnv plus the fmix64 finalizer.
	ref := func(key string, n int) string {
		f := fnv.New64a()
		f.Write([]byte(key))
		h := f.Sum64()
		h ^= h >> 33
		h *= 0xff51afd7ed558ccd
		h ^= h >> 33
		h *= 0xc4ceb9fe1a85ec53
		h ^= h >> 33
		return fmt.Sprintf("%0*d", len(strconv.Itoa(n-1)), h%uint64(n))
	}
	r := rand.New(rand.NewPCG(13, 14))
	for i := 0; i < 10000; i++ {
		k, n := randString(r, 8), 1+r.IntN(1000)
		if got, want := keys.Bucket(k, n), ref(k, n); got != want {
			t.Fatalf("Bucket(%q, %d) = %q, want %q", k, n, got, want)
		}
	}
	// Golden values: stored keys depend on these never changing.
	golden := []struct {
		key  string
		n    int
		want string
	}{
		{"", 16, "06"}, {"000223", 16, "11"}, {"jonesj@contoso.com", 10, "6"}, {"Sales", 100, "46"}, {"x", 1, "0"},
	}
	for _, g := range golden {
		if got := keys.Bucket(g.key, g.n); got != g.want {
			t.Errorf("Bucket(%q, %d) = %q, want %q (the hash must never change)", g.key, g.n, got, g.want)
		}
	}
}

func TestBucketDistribution(t *testing.T) {
	for _, n := range []int{2, 10, 16, 100} {
		const keysPerBucket = 2000
		counts := make([]int, n)
		for i := 0; i < n*keysPerBucket; i++ {
			b, err := strconv.Atoi(keys.Bucket(keys.Pad(uint64(i), 8), n)) // sequential ids: the hard case
			if err != nil || b < 0 || b >= n {
				t.Fatalf("bucket %v out of range", b)
			}
			counts[b]++
		}
		// Chi-square against the uniform distribution; the bound is far above
		// the 99.99th percentile for these degrees of freedom (n-1 <= 99).
		chi := 0.0
		for _, c := range counts {
			d := float64(c - keysPerBucket)
			chi += d * d / keysPerBucket
		}
		if limit := float64(n-1) + 6*math.Sqrt(2*float64(n-1)) + 10; chi > limit {
			t.Errorf("n=%d: chi-square %.1f > %.1f, counts %v", n, chi, limit, counts)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("Bucket(k, 0) did not panic")
		}
	}()
	keys.Bucket("k", 0)
}
