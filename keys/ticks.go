package keys

import (
	"fmt"
	"strconv"
	"time"
)

// maxTicks is .NET's DateTime.MaxValue.Ticks: 9999-12-31T23:59:59.9999999Z.
const maxTicks int64 = 3155378975999999999

// invertedTicksWidth is the length of every key made by InvertedTicks.
const invertedTicksWidth = 19

const (
	ticksPerSecond = 10_000_000
	// unixEpochTicks is the .NET tick count of 1970-01-01T00:00:00Z.
	unixEpochTicks = 621355968000000000
)

var (
	minTime = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)
)

// Ticks returns t as .NET ticks: 100-nanosecond intervals since
// 0001-01-01T00:00:00Z, truncating sub-100 ns as .NET does. It is exactly
// DateTime.Ticks of t converted to UTC. Ticks panics when t is outside .NET's
// range (0001-01-01 to 9999-12-31, UTC), which DateTime cannot represent.
func Ticks(t time.Time) int64 {
	if t.Before(minTime) || t.After(maxTime) {
		panic(fmt.Sprintf("keys.Ticks: %s is outside the .NET DateTime range (0001-01-01 to 9999-12-31 UTC)", t.UTC().Format(time.RFC3339Nano)))
	}
	return (t.Unix()*ticksPerSecond + unixEpochTicks) + int64(t.Nanosecond()/100)
}

// FromTicks returns the UTC time of a .NET tick count.
func FromTicks(ticks int64) time.Time {
	// Split before converting so that no intermediate overflows.
	sec, rem := ticks/ticksPerSecond, ticks%ticksPerSecond
	if rem < 0 {
		sec, rem = sec-1, rem+ticksPerSecond
	}
	return time.Unix(sec-unixEpochTicks/ticksPerSecond, rem*100).UTC()
}

// InvertedTicks returns the guide's log-tail key for t: .NET's
// DateTime.MaxValue.Ticks (9999-12-31T23:59:59.9999999Z) - Ticks(t) in 19
// zero-padded digits, exactly .NET's
// string.Format("{0:D19}", DateTime.MaxValue.Ticks - t.Ticks). Newer times
// sort first, so `$top=n` on such RowKeys returns the n newest entities.
// Like Ticks it panics for a time outside the .NET range rather than yield a
// key that sorts wrongly.
func InvertedTicks(t time.Time) string {
	s := strconv.FormatInt(maxTicks-Ticks(t), 10)
	return zeros(invertedTicksWidth-len(s)) + s
}

// ParseInvertedTicks reverses InvertedTicks, returning a UTC time with 100 ns
// precision. Anything but 19 digits of a value in [0,
// DateTime.MaxValue.Ticks] fails with ErrInvalidKey.
func ParseInvertedTicks(key string) (time.Time, error) {
	if len(key) != invertedTicksWidth {
		return time.Time{}, newError(key, -1, "inverted ticks need %d digits", invertedTicksWidth)
	}
	for i := 0; i < len(key); i++ {
		if key[i] < '0' || key[i] > '9' {
			return time.Time{}, newError(key, i, "not a digit")
		}
	}
	inv, err := strconv.ParseInt(key, 10, 64)
	if err != nil || inv > maxTicks {
		return time.Time{}, newError(key, -1, "inverted ticks out of range")
	}
	return FromTicks(maxTicks - inv), nil
}
