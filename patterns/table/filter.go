package table

import (
	"encoding/hex"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/keys"
)

// Filter is an OData filter expression built only from quoted, typed
// literals: user input can never change its structure. The zero Filter
// matches everything. Filters are immutable values.
//
// A query of a Table[T] types each literal by the property it is compared
// with: T's field decides (Eq("Age", 21) is 21 for an Int32 field, 21L for
// an Int64 one, 21.0 for a Double one), and a property T has no field for,
// or a value that cannot have the field's type (a string for a number, 3.5
// for an integer, 1<<40 for an Int32), is an ErrInvalidFilter naming both
// before anything is sent. Only a T with an extra map (such as Dynamic)
// compares unknown properties, with literals typed by the Go value.
//
// Untyped literals (String, and properties a T does not declare) follow the
// codec: string ('...' with quotes doubled), bool,
// int32/int16/int8/uint8/uint16 (Edm.Int32), int/int64/uint32 (Edm.Int64, with
// the L suffix), float32/float64 (always with a decimal point or exponent),
// time.Time (datetime'...Z'), []byte (X'...'), [16]byte types and
// aztables.EDMGUID (guid'...'). A literal must have the same EDM type as the
// stored property to match it.
type Filter struct {
	expr  string
	err   error
	n     int                             // comparisons, for maxFilterComparisons
	typed func(propTypes) (string, error) // renders with T's property types; nil: expr
	props []string                        // the properties compared, in order, once each
}

// properties returns the names of the properties the filter compares
// (fieldmodel.FilterProperties).
func (f Filter) properties() []string { return slices.Clone(f.props) }

// propTypes returns the kind of a property of T; ok is false for a
// property T has no field for.
type propTypes func(name string) (k kind, ok bool)

// render returns the expression with literals typed by types.
func (f Filter) render(types propTypes) (string, error) {
	if err := f.Err(); err != nil {
		return "", err
	}
	if f.typed == nil {
		return f.expr, nil
	}
	return f.typed(types)
}

// maxFilterComparisons is the most comparisons the service allows in one
// filter (Azure Table Storage: "no more than 15 discrete comparisons").
// Queries with a longer filter built here fail with ErrInvalidFilter before
// the network; split them into several queries (FanOut runs them in
// parallel).
const maxFilterComparisons = 15

// String returns the OData expression ("" for the zero Filter).
func (f Filter) String() string { return f.expr }

// Err returns why the filter cannot be used, or nil. Queries return this
// error before sending anything.
func (f Filter) Err() error {
	if f.err == nil && f.n > maxFilterComparisons {
		return fmt.Errorf("%w: %d comparisons, more than the service's %d", ErrInvalidFilter, f.n, maxFilterComparisons)
	}
	return f.err
}

func compare(op, prop string, v any) Filter {
	if err := validFilterProperty(prop); err != nil {
		return Filter{err: err}
	}
	lit, err := literal(v)
	if err != nil {
		return Filter{err: fmt.Errorf("%w: property %s: %v", ErrInvalidFilter, prop, err)}
	}
	return Filter{expr: prop + " " + op + " " + lit, n: 1, props: []string{prop}, typed: func(types propTypes) (string, error) {
		k, ok := types(prop)
		if !ok {
			return prop + " " + op + " " + lit, nil
		}
		tl, err := typedLiteral(k, v)
		if err != nil {
			return "", fmt.Errorf("%w: property %s: %v", ErrInvalidFilter, prop, err)
		}
		return prop + " " + op + " " + tl, nil
	}}
}

func validFilterProperty(prop string) error {
	switch prop {
	case "PartitionKey", "RowKey", "Timestamp":
		return nil
	}
	if err := validPropertyName(prop); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidFilter, err)
	}
	return nil
}

// Eq matches entities whose property prop equals v.
func Eq(prop string, v any) Filter { return compare("eq", prop, v) }

// Ne matches entities whose property prop differs from v.
func Ne(prop string, v any) Filter { return compare("ne", prop, v) }

// Gt matches entities whose property prop is greater than v.
func Gt(prop string, v any) Filter { return compare("gt", prop, v) }

// Ge matches entities whose property prop is greater than or equal to v.
func Ge(prop string, v any) Filter { return compare("ge", prop, v) }

// Lt matches entities whose property prop is less than v.
func Lt(prop string, v any) Filter { return compare("lt", prop, v) }

// Le matches entities whose property prop is less than or equal to v.
func Le(prop string, v any) Filter { return compare("le", prop, v) }

// And matches entities that every filter matches. Zero filters (which match
// everything) are skipped.
func And(fs ...Filter) Filter { return join(" and ", fs) }

// Or matches entities that any filter matches. A zero filter among them
// matches everything, and so does the result. Or of no filters at all would
// match nothing, which OData cannot express: it is an ErrInvalidFilter (an
// allow-list that turned out empty must not widen a query to everything).
func Or(fs ...Filter) Filter {
	if len(fs) == 0 {
		return Filter{err: fmt.Errorf("%w: Or of no filters matches nothing", ErrInvalidFilter)}
	}
	for _, f := range fs {
		if f.err == nil && f.expr == "" {
			if err := firstErr(fs); err != nil {
				return Filter{err: err}
			}
			return Filter{}
		}
	}
	return join(" or ", fs)
}

func firstErr(fs []Filter) error {
	for _, f := range fs {
		if f.err != nil {
			return f.err
		}
	}
	return nil
}

func join(op string, fs []Filter) Filter {
	if err := firstErr(fs); err != nil {
		return Filter{err: err}
	}
	parts := make([]string, 0, len(fs))
	n := 0
	var props []string
	for _, f := range fs {
		if f.expr != "" {
			parts = append(parts, "("+f.expr+")")
			n += f.n
			for _, p := range f.props {
				if !slices.Contains(props, p) {
					props = append(props, p)
				}
			}
		}
	}
	subs := slices.Clone(fs)
	typed := func(types propTypes) (string, error) {
		parts := make([]string, 0, len(subs))
		for _, f := range subs {
			e, err := f.render(types)
			if err != nil {
				return "", err
			}
			if e != "" {
				parts = append(parts, "("+e+")")
			}
		}
		if len(parts) == 1 {
			return parts[0][1 : len(parts[0])-1], nil
		}
		return strings.Join(parts, op), nil
	}
	switch len(parts) {
	case 0:
		return Filter{}
	case 1:
		return Filter{expr: parts[0][1 : len(parts[0])-1], n: n, typed: typed, props: props}
	}
	return Filter{expr: strings.Join(parts, op), n: n, typed: typed, props: props}
}

// Not matches entities f does not match. Not of the zero Filter (which
// matches everything) would match nothing, which OData cannot express: it is
// an ErrInvalidFilter.
func Not(f Filter) Filter {
	if f.err != nil {
		return f
	}
	if f.expr == "" {
		return Filter{err: fmt.Errorf("%w: Not of an empty filter matches nothing", ErrInvalidFilter)}
	}
	return Filter{expr: "not (" + f.expr + ")", n: f.n, props: f.props, typed: func(types propTypes) (string, error) {
		e, err := f.render(types)
		return "not (" + e + ")", err
	}}
}

// PartitionKey matches one partition.
func PartitionKey(pk string) Filter { return Eq("PartitionKey", pk) }

// RowKeyRange matches RowKeys in [lo, hi); an empty bound is open.
func RowKeyRange(lo, hi string) Filter {
	var fs []Filter
	if lo != "" {
		fs = append(fs, Ge("RowKey", lo))
	}
	if hi != "" {
		fs = append(fs, Lt("RowKey", hi))
	}
	return And(fs...)
}

// RowKeyPrefix matches the compound RowKeys (keys.Join) that start with
// parts, using keys.PrefixRange: a range query, not a scan.
func RowKeyPrefix(parts ...string) Filter {
	if len(parts) == 0 {
		return Filter{}
	}
	lo, hi := keys.PrefixRange(parts...)
	return RowKeyRange(lo, hi)
}

// literal renders v as an OData literal of its EDM type (see Filter).
func literal(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return "'" + strings.ReplaceAll(x, "'", "''") + "'", nil
	case bool:
		return strconv.FormatBool(x), nil
	case int8, int16, int32, uint8, uint16:
		return fmt.Sprint(x), nil
	case int:
		return strconv.Itoa(x) + "L", nil
	case int64:
		return strconv.FormatInt(x, 10) + "L", nil
	case uint32:
		return strconv.FormatUint(uint64(x), 10) + "L", nil
	case aztables.EDMInt64:
		return strconv.FormatInt(int64(x), 10) + "L", nil
	case float32:
		return doubleLiteral(float64(x))
	case float64:
		return doubleLiteral(x)
	case time.Time:
		if err := dateTimeInRange(x); err != nil {
			return "", err
		}
		return "datetime'" + x.UTC().Truncate(100).Format("2006-01-02T15:04:05.0000000Z") + "'", nil
	case aztables.EDMDateTime:
		return literal(time.Time(x))
	case []byte:
		return "X'" + hex.EncodeToString(x) + "'", nil
	case aztables.EDMBinary:
		return literal([]byte(x))
	case aztables.EDMGUID:
		g, err := parseGUID(string(x))
		if err != nil {
			return "", err
		}
		return "guid'" + g.String() + "'", nil
	}
	rv := reflect.ValueOf(v)
	switch {
	case rv.Kind() == reflect.Array && rv.Len() == 16 && rv.Type().Elem().Kind() == reflect.Uint8:
		var g GUID
		reflect.Copy(reflect.ValueOf(&g).Elem(), rv)
		return "guid'" + g.String() + "'", nil
	case rv.Kind() == reflect.String:
		return literal(rv.String())
	}
	return "", fmt.Errorf("unsupported literal type %T", v)
}

// typedLiteral renders v as a literal of kind k, or says why it cannot
// have that type.
func typedLiteral(k kind, v any) (string, error) {
	rv := reflect.ValueOf(v)
	mismatch := fmt.Errorf("the property is %s, the value %v (%T) is not", kindName(k), v, v)
	switch k {
	case kString, kJSON:
		if rv.Kind() == reflect.String {
			return literal(rv.String())
		}
	case kBool:
		if rv.Kind() == reflect.Bool {
			return strconv.FormatBool(rv.Bool()), nil
		}
	case kInt32, kInt64, kDouble:
		var f float64
		var i int64
		switch {
		case rv.CanInt():
			i, f = rv.Int(), float64(rv.Int())
		case rv.CanUint() && rv.Uint() <= math.MaxInt64:
			i, f = int64(rv.Uint()), float64(rv.Uint())
		case rv.CanFloat() && k == kDouble:
			return doubleLiteral(rv.Float())
		case rv.CanUint():
			return "", fmt.Errorf("the value %v does not fit %s", v, kindName(k))
		default:
			return "", mismatch
		}
		switch k {
		case kInt32:
			if i < math.MinInt32 || i > math.MaxInt32 {
				return "", fmt.Errorf("the value %v does not fit Edm.Int32", v)
			}
			return strconv.FormatInt(i, 10), nil
		case kInt64:
			return strconv.FormatInt(i, 10) + "L", nil
		}
		return doubleLiteral(f)
	case kTime:
		switch x := v.(type) {
		case time.Time, aztables.EDMDateTime:
			return literal(x)
		}
	case kBinary:
		switch x := v.(type) {
		case []byte, aztables.EDMBinary:
			return literal(x)
		}
	case kGUID, kGUIDString:
		if rv.Kind() == reflect.String {
			g, err := parseGUID(rv.String())
			if err != nil {
				return "", err
			}
			return "guid'" + g.String() + "'", nil
		}
		if rv.Kind() == reflect.Array && rv.Len() == 16 && rv.Type().Elem().Kind() == reflect.Uint8 {
			return literal(v)
		}
	}
	return "", mismatch
}

// kindName names a kind's EDM type.
func kindName(k kind) string {
	switch k {
	case kString, kJSON:
		return "Edm.String"
	case kBool:
		return "Edm.Boolean"
	case kInt32:
		return "Edm.Int32"
	}
	return edmNames[k]
}

// doubleLiteral writes f in plain decimal notation with a decimal point
// (2.0, 0.0000001, 1000000000000000000000.0): exponents are spelled
// differently across OData versions and parsers; plain decimals are not.
func doubleLiteral(f float64) (string, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", fmt.Errorf("no OData literal for %v", f)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s, nil
}
