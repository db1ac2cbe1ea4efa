package keys_test

import (
	"fmt"
	"time"

	"github.com/tablekit/tablekit/keys"
)

// The guide's intra-partition secondary index stores each employee under
// several RowKeys: one per lookup. Join keeps them readable and sortable.
func Example_indexKeys() {
	fmt.Println(keys.Join("empid", keys.Pad(223, 6)))
	fmt.Println(keys.Join("email", "jonesj@contoso.com"))

	// All employees with ids 000100-000199: a RowKey range query.
	lo, _ := keys.PrefixRange("empid", keys.Pad(100, 6))
	_, hi := keys.PrefixRange("empid", keys.Pad(199, 6))
	fmt.Printf("RowKey ge '%s' and RowKey lt '%s'\n", lo, hi)
	// Output:
	// empid!000223
	// email!jonesj@contoso.2Ecom
	// RowKey ge 'empid!000100' and RowKey lt 'empid!000199"'
}

// The compound key pattern: an employee's yearly reviews sit next to each
// other, and one range query over the employee's prefix fetches them all.
func Example_compoundKey() {
	for _, year := range []string{"2012", "2013"} {
		fmt.Println(keys.Join(keys.Pad(123, 6), year))
	}
	lo, hi := keys.PrefixRange(keys.Pad(123, 6))
	fmt.Printf("RowKey ge '%s' and RowKey lt '%s'\n", lo, hi)
	parts, _ := keys.Split("000123!2013")
	fmt.Println(parts)
	// Output:
	// 000123!2012
	// 000123!2013
	// RowKey ge '000123' and RowKey lt '000123"'
	// [000123 2013]
}

// The log tail pattern: inverted ticks make the newest entity sort first.
func ExampleInvertedTicks() {
	t := time.Date(2014, 7, 31, 18, 0, 0, 0, time.UTC)
	k := keys.InvertedTicks(t)
	fmt.Println(k)
	fmt.Println(keys.InvertedTicks(t.Add(time.Second)) < k) // newer sorts first
	back, _ := keys.ParseInvertedTicks(k)
	fmt.Println(back)
	// Output:
	// 2519954711999999999
	// true
	// 2014-07-31 18:00:00 +0000 UTC
}

func ExampleEscape() {
	fmt.Println(keys.Escape("Sales"))
	fmt.Println(keys.Escape("R&D/Europe #2"))
	s, _ := keys.Unescape(keys.Escape("R&D/Europe #2"))
	fmt.Println(s)
	// Output:
	// Sales
	// R&D.2FEurope"20"232
	// R&D/Europe #2
}

func ExampleValidate() {
	fmt.Println(keys.Validate("Sales"))
	fmt.Println(keys.Validate("R&D/Europe"))
	// Output:
	// <nil>
	// invalid key "R&D/Europe": character U+002F ('/') is not allowed in keys at byte 3
}

func ExampleInt64() {
	for _, n := range []int64{-5, 0, 42} {
		fmt.Println(keys.Int64(n))
	}
	// Output:
	// -9223372036854775803
	// 00000000000000000000
	// 00000000000000000042
}

// Spreading an append-heavy workload over 16 partitions instead of one.
func ExampleBucket() {
	pk := keys.Join(keys.Bucket("order-1001", 16), "2014-07-31")
	fmt.Println(pk)
	// Output:
	// 06!2014-07-31
}
