package keys

import (
	"fmt"
	"math"
	"strconv"
)

// int64Width is the length of every key made by Int64.
const int64Width = 20

// Int64 encodes n as a fixed-width key that sorts as the numbers do,
// negatives included. A non-negative n is '0' followed by n in 19 zero-padded
// digits (Int64(123) == "00000000000000000123"); a negative n is '-' followed
// by the 19 digits of n - math.MinInt64, so that more negative numbers sort
// first (Int64(-1) == "-9223372036854775807").
func Int64(n int64) string {
	if n >= 0 {
		return fmt.Sprintf("0%019d", n)
	}
	return fmt.Sprintf("-%019d", uint64(n)-(1<<63))
}

// ParseInt64 reverses Int64. Anything else fails with ErrInvalidKey.
func ParseInt64(key string) (int64, error) {
	if len(key) != int64Width || (key[0] != '0' && key[0] != '-') {
		return 0, newError(key, -1, "not an Int64 key (want '0' or '-' and 19 digits)")
	}
	for i := 1; i < len(key); i++ {
		if key[i] < '0' || key[i] > '9' {
			return 0, newError(key, i, "not a digit")
		}
	}
	u, err := strconv.ParseUint(key[1:], 10, 64)
	if err != nil || u > math.MaxInt64 {
		return 0, newError(key, -1, "out of the int64 range")
	}
	if key[0] == '0' {
		return int64(u), nil
	}
	return int64(u + (1 << 63)), nil
}

// Pad formats n in decimal, zero-padded to width digits, the guide's fixed
// width keys: Pad(123, 8) == "00000123". Fixed width makes string order agree
// with numeric order. Pad panics when width < 1 or n needs more than width
// digits: silently widening would break the order of existing keys.
func Pad(n uint64, width int) string {
	s := strconv.FormatUint(n, 10)
	if width < 1 || len(s) > width {
		panic(fmt.Sprintf("keys.Pad: %d does not fit in %d digits", n, width))
	}
	if len(s) == width {
		return s
	}
	return zeros(width-len(s)) + s
}

func zeros(n int) string {
	const z = "00000000000000000000"
	if n <= len(z) {
		return z[:n]
	}
	return z + zeros(n-len(z))
}

// ParsePad reverses Pad: key must be exactly width decimal digits.
func ParsePad(key string, width int) (uint64, error) {
	if len(key) != width {
		return 0, newError(key, -1, "want %d digits", width)
	}
	for i := 0; i < len(key); i++ {
		if key[i] < '0' || key[i] > '9' {
			return 0, newError(key, i, "not a digit")
		}
	}
	n, err := strconv.ParseUint(key, 10, 64)
	if err != nil {
		return 0, newError(key, -1, "out of the uint64 range")
	}
	return n, nil
}
