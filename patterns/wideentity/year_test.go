package wideentity_test

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"

	"github.com/tablekit/tablekit/patterns/table"
)

// year is a typed wide entity: the guide's daily counts for a leap year
// (366 Int64 properties, D001 to D366), and eight fields of every other
// EDM type: 430 properties, more than one entity holds.
type year struct {
	table.Meta
	Sensor                                                                                                                                                                                   string         `table:",pk"`
	Year                                                                                                                                                                                     string         `table:",rk"`
	D001, D002, D003, D004, D005, D006, D007, D008, D009, D010, D011, D012, D013, D014, D015, D016, D017, D018, D019, D020, D021, D022, D023, D024, D025, D026, D027, D028, D029, D030, D031 int64          // January
	D032, D033, D034, D035, D036, D037, D038, D039, D040, D041, D042, D043, D044, D045, D046, D047, D048, D049, D050, D051, D052, D053, D054, D055, D056, D057, D058, D059, D060             int64          // February
	D061, D062, D063, D064, D065, D066, D067, D068, D069, D070, D071, D072, D073, D074, D075, D076, D077, D078, D079, D080, D081, D082, D083, D084, D085, D086, D087, D088, D089, D090, D091 int64          // March
	D092, D093, D094, D095, D096, D097, D098, D099, D100, D101, D102, D103, D104, D105, D106, D107, D108, D109, D110, D111, D112, D113, D114, D115, D116, D117, D118, D119, D120, D121       int64          // April
	D122, D123, D124, D125, D126, D127, D128, D129, D130, D131, D132, D133, D134, D135, D136, D137, D138, D139, D140, D141, D142, D143, D144, D145, D146, D147, D148, D149, D150, D151, D152 int64          // May
	D153, D154, D155, D156, D157, D158, D159, D160, D161, D162, D163, D164, D165, D166, D167, D168, D169, D170, D171, D172, D173, D174, D175, D176, D177, D178, D179, D180, D181, D182       int64          // June
	D183, D184, D185, D186, D187, D188, D189, D190, D191, D192, D193, D194, D195, D196, D197, D198, D199, D200, D201, D202, D203, D204, D205, D206, D207, D208, D209, D210, D211, D212, D213 int64          // July
	D214, D215, D216, D217, D218, D219, D220, D221, D222, D223, D224, D225, D226, D227, D228, D229, D230, D231, D232, D233, D234, D235, D236, D237, D238, D239, D240, D241, D242, D243, D244 int64          // August
	D245, D246, D247, D248, D249, D250, D251, D252, D253, D254, D255, D256, D257, D258, D259, D260, D261, D262, D263, D264, D265, D266, D267, D268, D269, D270, D271, D272, D273, D274       int64          // September
	D275, D276, D277, D278, D279, D280, D281, D282, D283, D284, D285, D286, D287, D288, D289, D290, D291, D292, D293, D294, D295, D296, D297, D298, D299, D300, D301, D302, D303, D304, D305 int64          // October
	D306, D307, D308, D309, D310, D311, D312, D313, D314, D315, D316, D317, D318, D319, D320, D321, D322, D323, D324, D325, D326, D327, D328, D329, D330, D331, D332, D333, D334, D335       int64          // November
	D336, D337, D338, D339, D340, D341, D342, D343, D344, D345, D346, D347, D348, D349, D350, D351, D352, D353, D354, D355, D356, D357, D358, D359, D360, D361, D362, D363, D364, D365, D366 int64          // December
	T01, T02, T03, T04, T05, T06, T07, T08                                                                                                                                                   time.Time      // Edm.DateTime, 100 ns
	B01, B02, B03, B04, B05, B06, B07, B08                                                                                                                                                   []byte         // Edm.Binary
	G01, G02, G03, G04, G05, G06, G07, G08                                                                                                                                                   table.GUID     // Edm.Guid
	X01, X02, X03, X04, X05, X06, X07, X08                                                                                                                                                   float64        // Edm.Double, whole numbers too
	S01, S02, S03, S04, S05, S06, S07, S08                                                                                                                                                   string         // Edm.String
	I01, I02, I03, I04, I05, I06, I07, I08                                                                                                                                                   int32          // Edm.Int32
	F01, F02, F03, F04, F05, F06, F07, F08                                                                                                                                                   bool           // Edm.Boolean
	P01, P02, P03, P04, P05, P06, P07, P08                                                                                                                                                   *int64         // nil is no property
	Extra                                                                                                                                                                                    map[string]any `table:",extra"`
}

// fullYear returns a year with every field set to a value that tests its
// type's exactness.
func fullYear() year {
	var y year
	v := reflect.ValueOf(&y).Elem()
	zone := time.FixedZone("+05:30", 5*3600+1800)
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Interface().(type) {
		case int64:
			f.SetInt(math.MaxInt64 - int64(i)*1_000_003) // beyond float64's 2^53
		case time.Time:
			f.Set(reflect.ValueOf(time.Date(2024, 2, 29, 23, 59, 59, 123456789+i*100, zone)))
		case []byte:
			f.SetBytes(bytes.Repeat([]byte{byte(i), 0, 255}, i%3)) // B01.. empty, then 3, 6 bytes
		case table.GUID:
			f.Set(reflect.ValueOf(table.GUID{byte(i), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, byte(i)}))
		case float64:
			f.SetFloat([]float64{2, -0.5, math.MaxFloat64, math.Inf(1), math.SmallestNonzeroFloat64, 1e21, -3, 0.1}[i%8])
		case string:
			f.SetString(fmt.Sprintf("héllo %d 😀 \"quoted\" <&>", i))
		case int32:
			f.SetInt([]int64{math.MinInt32, math.MaxInt32, 0, -1}[i%4])
		case bool:
			f.SetBool(i%2 == 0)
		case *int64:
			if i%2 == 0 {
				n := int64(-i) << 40
				f.Set(reflect.ValueOf(&n))
			}
		}
	}
	y.Extra = map[string]any{"Note": "beside the fields", "Big": int64(1) << 40}
	return y
}

// differences compares two years field by field (times as instants in
// UTC at the service's 100 ns) and names the first fields that differ.
func differences(got, want year) string {
	var out []string
	g, w := reflect.ValueOf(got), reflect.ValueOf(want)
	for i := range g.NumField() {
		name := g.Type().Field(i).Name
		gf, wf := g.Field(i).Interface(), w.Field(i).Interface()
		if wt, ok := wf.(time.Time); ok {
			gt := gf.(time.Time)
			if !gt.Equal(wt.Truncate(100)) || gt.Location() != time.UTC {
				out = append(out, fmt.Sprintf("%s = %v, want %v", name, gt, wt.UTC().Truncate(100)))
			}
			continue
		}
		if !reflect.DeepEqual(gf, wf) {
			out = append(out, fmt.Sprintf("%s = %#v, want %#v", name, gf, wf))
		}
	}
	if len(out) > 5 {
		out = append(out[:5], fmt.Sprintf("and %d more", len(out)-5))
	}
	return strings.Join(out, "; ")
}
