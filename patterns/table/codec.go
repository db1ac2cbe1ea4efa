package table

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/tablekit/tablekit/internal/entitysize"
	"github.com/tablekit/tablekit/internal/fieldmodel"
	"github.com/tablekit/tablekit/internal/reserved"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/tablekit/tablekit/keys"
)

// kind is how a Go field is stored.
type kind uint8

const (
	kString kind = iota + 1
	kBool
	kInt32
	kInt64
	kDouble
	kTime
	kBinary
	kGUID       // [16]byte-based types
	kGUIDString // aztables.EDMGUID and `table:",guid"` strings
	kJSON       // `table:",json"`: any value, stored as a JSON string
)

var edmNames = map[kind]string{kInt64: "Edm.Int64", kDouble: "Edm.Double", kTime: "Edm.DateTime", kBinary: "Edm.Binary", kGUID: "Edm.Guid", kGUIDString: "Edm.Guid"}

// field is one stored property of a struct type.
type field struct {
	name      string
	prefix    []byte // `"Name":` pre-escaped
	annot     []byte // `,"Name@odata.type":"Edm.X"` or nil
	index     []int
	kind      kind
	ptr       bool // a pointer field: nil means absent
	omitempty bool
	nameSize  int // 8 + 2*len(name) UTF-16: the service's per-property overhead
}

// codec encodes and decodes one struct type. It is computed once per type
// and is immutable, so safe for concurrent use. It holds any number of
// fields: a Table[T] needs T to fit one entity (fitsOneEntity), while
// ToDynamic and FromDynamic do not.
type codec struct {
	typ       reflect.Type
	fields    []field
	byName    map[string]int
	pk, rk    []int    // index paths of the key fields, or nil
	meta      []int    // a Meta field
	timestamp []int    // a time.Time field named Timestamp
	extra     []int    // a map[string]any field tagged extra
	selects   []string // the default projection; nil for every property
	implicit  []string // what every projection adds: keys, Timestamp, history
	tk        string   // a property under reserved.PropertyPrefix: T reads, but cannot write
}

var codecs sync.Map // reflect.Type -> *codec or error

var (
	timeType    = reflect.TypeOf(time.Time{})
	metaType    = reflect.TypeOf(Meta{})
	etagType    = reflect.TypeOf(azcore.ETag(""))
	edmGUIDType = reflect.TypeOf(aztables.EDMGUID(""))
	extraType   = reflect.TypeOf(map[string]any(nil))
)

// codecFor returns the codec of struct type t, building it on first use.
func codecFor(t reflect.Type) (*codec, error) {
	if c, ok := codecs.Load(t); ok {
		if err, isErr := c.(error); isErr {
			return nil, err
		}
		return c.(*codec), nil
	}
	c, err := buildCodec(t)
	if err != nil {
		codecs.Store(t, err)
		return nil, err
	}
	actual, _ := codecs.LoadOrStore(t, c)
	return actual.(*codec), nil
}

func buildCodec(t reflect.Type) (*codec, error) {
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("%w: %v is not a struct type", ErrInvalidEntity, t)
	}
	c := &codec{typ: t, byName: map[string]int{}}
	if err := c.addFields(t, nil); err != nil {
		return nil, err
	}
	c.implicit = []string{"PartitionKey", "RowKey"}
	if c.timestamp != nil || c.meta != nil {
		c.implicit = append(c.implicit, "Timestamp")
	}
	if c.meta != nil {
		c.implicit = append(c.implicit, reserved.WriteProperty)
	}
	if c.extra == nil {
		c.selects = slices.Clone(c.implicit)
		for _, f := range c.fields {
			c.selects = append(c.selects, f.name)
		}
	}
	return c, nil
}

// fitsOneEntity reports an error when the type has more properties than one
// entity holds: a check of the type, under the property count every
// profile shares (Storage's 252).
func (c *codec) fitsOneEntity() error {
	if n := Storage.MaxProperties; len(c.fields) > n {
		return fmt.Errorf("%w: %v has %d properties, more than the service's %d", ErrInvalidEntity, c.typ, len(c.fields), n)
	}
	return nil
}

func (c *codec) addFields(t reflect.Type, parent []int) error {
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		index := append(slices.Clone(parent), i)
		tag := sf.Tag.Get("table")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		opt := func(o string) bool { return slices.Contains(strings.Split(opts, ","), o) }
		ft := sf.Type
		switch {
		case ft == metaType:
			if !sf.IsExported() || c.meta != nil {
				return fmt.Errorf("%w: %v.%s: the Meta field must be one exported field (embed table.Meta)", ErrInvalidEntity, c.typ, sf.Name)
			}
			c.meta = index
			continue
		case sf.Anonymous && ft.Kind() == reflect.Struct && name == "" && ft != timeType:
			if err := c.addFields(ft, index); err != nil {
				return err
			}
			continue
		case !sf.IsExported():
			continue
		}
		if name == "" {
			name = sf.Name
		}
		where := fmt.Sprintf("%v.%s", c.typ, sf.Name)
		switch {
		case opt("pk") || (name == "PartitionKey" && !opt("rk")):
			if ft.Kind() != reflect.String || c.pk != nil {
				return fmt.Errorf("%w: %s: the PartitionKey field must be one string field", ErrInvalidEntity, where)
			}
			c.pk = index
			continue
		case opt("rk") || name == "RowKey":
			if ft.Kind() != reflect.String || c.rk != nil {
				return fmt.Errorf("%w: %s: the RowKey field must be one string field", ErrInvalidEntity, where)
			}
			c.rk = index
			continue
		case name == "Timestamp":
			if ft != timeType {
				return fmt.Errorf("%w: %s: Timestamp is service-maintained and must be a time.Time", ErrInvalidEntity, where)
			}
			c.timestamp = index
			continue
		case opt("extra"):
			if ft != extraType {
				return fmt.Errorf("%w: %s: an extra field must be a map[string]any", ErrInvalidEntity, where)
			}
			c.extra = index
			continue
		}
		if err := validPropertyName(name); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		if strings.HasPrefix(name, reserved.PropertyPrefix) && c.tk == "" {
			c.tk = name
		}
		if _, dup := c.byName[name]; dup {
			return fmt.Errorf("%w: %s: property %q is defined twice", ErrInvalidEntity, where, name)
		}
		f := field{name: name, index: index, omitempty: opt("omitempty")}
		if ft.Kind() == reflect.Pointer {
			f.ptr, ft = true, ft.Elem()
		}
		switch {
		case opt("json"):
			f.kind = kJSON
		case opt("guid") && ft.Kind() == reflect.String:
			f.kind = kGUIDString
		default:
			k, err := kindOf(ft)
			if err != nil {
				return fmt.Errorf("%w: %s: %v", ErrInvalidEntity, where, err)
			}
			f.kind = k
		}
		f.prefix, _ = appendString(nil, name)
		f.prefix = append(f.prefix, ':')
		if edm, ok := edmNames[f.kind]; ok {
			f.annot = append([]byte{','}, f.prefix[:len(f.prefix)-2]...)
			f.annot = append(f.annot, `@odata.type":"`+edm+`"`...)
		}
		f.nameSize = 8 + 2*entitysize.UTF16Len(name)
		c.byName[name] = len(c.fields)
		c.fields = append(c.fields, f)
	}
	return nil
}

// errUnsigned is the one hint for 64-bit unsigned values, in struct fields
// and property bags alike.
var errUnsigned = errors.New("a 64-bit unsigned value cannot be stored exactly (Edm.Int64 is signed): use int64, or tag a struct field `table:\",json\"` to store it as a JSON string")

func kindOf(t reflect.Type) (kind, error) {
	switch {
	case t == timeType:
		return kTime, nil
	case t == edmGUIDType:
		return kGUIDString, nil
	case t == etagType:
		return kString, nil
	case t.Kind() == reflect.Array && t.Len() == 16 && t.Elem().Kind() == reflect.Uint8:
		return kGUID, nil
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
		return kBinary, nil
	}
	switch t.Kind() {
	case reflect.String:
		return kString, nil
	case reflect.Bool:
		return kBool, nil
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Uint8, reflect.Uint16:
		return kInt32, nil
	case reflect.Int, reflect.Int64, reflect.Uint32:
		return kInt64, nil
	case reflect.Float32, reflect.Float64:
		return kDouble, nil
	case reflect.Uint, reflect.Uint64, reflect.Uintptr:
		return 0, errUnsigned
	}
	return 0, fmt.Errorf("type %v cannot be stored as a table property (tag the field `table:\",json\"` to store it as JSON)", t)
}

// odataKeywords are the words of the service's filter language ($filter,
// OData v3): a property named like one could not be used in a filter.
var odataKeywords = map[string]bool{
	"and": true, "or": true, "not": true, "eq": true, "ne": true, "gt": true, "ge": true, "lt": true, "le": true,
	"true": true, "false": true, "null": true, "add": true, "sub": true, "mul": true, "div": true, "mod": true,
}

// validPropertyName checks the service's rules: at most 255 characters, a
// C# identifier (a letter or '_', then letters, digits or '_'), and not a
// name the service reserves.
func validPropertyName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: empty property name", ErrInvalidEntity)
	case utf8.RuneCountInString(name) > fieldmodel.MaxNameLength:
		return fmt.Errorf("%w: property name %.20q... is longer than %d characters", ErrInvalidEntity, name, fieldmodel.MaxNameLength)
	case name == "PartitionKey" || name == "RowKey" || name == "Timestamp" || name == reserved.WriteProperty:
		return fmt.Errorf("%w: property name %q is reserved", ErrInvalidEntity, name)
	case odataKeywords[name]:
		return fmt.Errorf("%w: property name %q is an OData keyword, which a filter cannot name", ErrInvalidEntity, name)
	}
	for i, r := range name {
		if r == '_' || unicode.IsLetter(r) || (i > 0 && (unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r) || unicode.Is(unicode.Pc, r))) {
			continue
		}
		return fmt.Errorf("%w: property name %q is not a C# identifier (character %q)", ErrInvalidEntity, name, r)
	}
	return nil
}

// fieldMask selects the properties a partial merge writes (Fields).
type fieldMask struct {
	fields []bool          // by index in codec.fields
	extra  map[string]bool // names of extra-map properties
}

// mask builds the fieldMask for names, which must be properties of T
// (fields, or any valid name when T has an extra map). nil names: nil.
func (c *codec) mask(names []string) (*fieldMask, error) {
	if names == nil {
		return nil, nil
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%w: Fields() names no property", ErrInvalidEntity)
	}
	m := &fieldMask{fields: make([]bool, len(c.fields))}
	for _, name := range names {
		if i, ok := c.byName[name]; ok {
			m.fields[i] = true
			continue
		}
		if c.extra == nil {
			return nil, fmt.Errorf("%w: Fields: %v has no property %q", ErrInvalidEntity, c.typ, name)
		}
		if err := validPropertyName(name); err != nil {
			return nil, fmt.Errorf("Fields: %w", err)
		}
		if m.extra == nil {
			m.extra = map[string]bool{}
		}
		m.extra[name] = true
	}
	return m, nil
}

// encoded is an entity ready to send.
type encoded struct {
	body   []byte
	pk, rk string
	props  int
	size   int // as the service counts it
	// tk allows property names under "Tk" in a
	// Dynamic's bag: a pattern's reserved view, or a conversion.
	tk bool
	// p is the profile whose limits apply; nil for Storage's.
	p *Profile
}

// profile returns the profile whose limits apply to e.
func (e *encoded) profile() *Profile {
	if e.p == nil {
		return Storage
	}
	return e.p
}

// checkEntity applies the profile's per-entity limits to e, whose body is
// complete.
func (e *encoded) checkEntity() error {
	p := e.profile()
	switch {
	case e.props > p.MaxProperties:
		return refused("encode", e.pk, e.rk, ErrInvalidEntity, "%d properties, more than %s's %d", e.props, p.Name, p.MaxProperties)
	case p.MaxEntitySize > 0 && e.size > p.MaxEntitySize:
		return refused("encode", e.pk, e.rk, ErrTooLarge, "entity is %d bytes as %s counts them, more than %d", e.size, p.Name, p.MaxEntitySize)
	case p.MaxEntityJSON > 0 && len(e.body) > p.MaxEntityJSON:
		return refused("encode", e.pk, e.rk, ErrTooLarge, "entity is %d bytes of JSON, more than %s's %d", len(e.body), p.Name, p.MaxEntityJSON)
	}
	return nil
}

// checkValue applies the profile's limits to one property: its value's
// size (size as the service counts it, with 4 bytes of overhead) and its
// name.
func (e *encoded) checkValue(name string, size int) error {
	p := e.profile()
	if size > p.MaxValueSize+4 {
		return refused("encode", e.pk, e.rk, ErrTooLarge, "property %s is %d bytes, more than %s's %d", name, size-4, p.Name, p.MaxValueSize)
	}
	if len(p.ReservedNames) > 0 {
		if err := p.checkName(name); err != nil {
			return &Error{Op: "encode", PartitionKey: e.pk, RowKey: e.rk, Err: err}
		}
	}
	return nil
}

// stampable reports whether TkWrites fits the entity's limits.
func (e encoded) stampable() bool {
	p := e.profile()
	return e.props < p.MaxProperties && (p.MaxEntitySize == 0 || e.size+stampSize <= p.MaxEntitySize) &&
		(p.MaxEntityJSON == 0 || len(e.body)+stampJSON <= p.MaxEntityJSON)
}

// encode writes v (an addressable struct value) as entity JSON with the
// given keys, validating everything the service would check.
func (c *codec) encode(b []byte, v reflect.Value, pk, rk string, only *fieldMask, tk bool, p *Profile) (encoded, error) {
	e := encoded{pk: pk, rk: rk, tk: tk, p: p}
	if err := validKeys(pk, rk); err != nil {
		return e, err
	}
	if err := e.profile().checkKeys(pk, rk); err != nil {
		return e, err
	}
	if c.tk != "" && !tk {
		return e, refused("encode", pk, rk, ErrInvalidEntity, "%v stores property %q, which starts with %q (reserved.PropertyPrefix): such a type can read a pattern's rows, not write them", c.typ, c.tk, reserved.PropertyPrefix)
	}
	b = appendKeys(b, &e)
	b, err := c.appendProperties(b, v, &e, only)
	if err != nil {
		return e, err
	}
	e.body = append(b, '}')
	return e, e.checkEntity()
}

// appendKeys opens the entity JSON with e's keys, unchecked, and counts
// their size.
func appendKeys(b []byte, e *encoded) []byte {
	var n int
	b = append(b, `{"PartitionKey":`...)
	b, n = appendString(b, e.pk)
	e.size = 4 + 2*n
	b = append(b, `,"RowKey":`...)
	b, n = appendString(b, e.rk)
	e.size += 2 * n
	return b
}

// appendProperties writes v's properties (those of only, when not nil),
// each preceded by a comma, validating each value as the service would and
// counting them into e. It does not apply the per-entity limits.
func (c *codec) appendProperties(b []byte, v reflect.Value, e *encoded, only *fieldMask) ([]byte, error) {
	pk, rk := e.pk, e.rk
	for i := range c.fields {
		f := &c.fields[i]
		if only != nil && !only.fields[i] {
			continue
		}
		fv := v.FieldByIndex(f.index)
		if f.ptr {
			if fv.IsNil() {
				continue
			}
			fv = fv.Elem()
		} else if f.omitempty && fv.IsZero() {
			continue
		}
		if skip, err := unset(f.kind, fv); err != nil {
			return b, refused("encode", pk, rk, ErrInvalidEntity, "property %s: %v", f.name, err)
		} else if skip {
			continue
		}
		b = append(b, ',')
		b = append(b, f.prefix...)
		var size int
		var err error
		if b, size, err = appendValue(b, f.kind, fv); err != nil {
			return b, refused("encode", pk, rk, ErrInvalidEntity, "property %s: %v", f.name, err)
		}
		if err := e.checkValue(f.name, size); err != nil {
			return b, err
		}
		b = append(b, f.annot...)
		e.size += f.nameSize + size
		e.props++
	}
	if c.extra != nil {
		return c.appendExtra(b, v.FieldByIndex(c.extra), e, only)
	}
	return b, nil
}

// notReserved refuses keys under "~tk~": those rows belong to
// tablekit's patterns (internal/reserved gives them their views).
func notReserved(pk, rk string) error {
	for _, k := range [2]struct{ name, v string }{{"PartitionKey", pk}, {"RowKey", rk}} {
		if strings.HasPrefix(k.v, reserved.Prefix) {
			return refused("encode", pk, rk, ErrInvalidKey, "%s %q starts with %q (reserved.Prefix), which tablekit's patterns keep for their own rows", k.name, k.v, reserved.Prefix)
		}
	}
	return nil
}

// validKeys checks keys as the real service (and the SDK) would.
func validKeys(pk, rk string) error {
	if pk == "" {
		return refused("encode", pk, rk, ErrInvalidKey, "empty PartitionKey (the service allows it, but the Azure SDK cannot get, update or delete such an entity)")
	}
	if err := keys.Validate(pk); err != nil {
		return &Error{Op: "encode", PartitionKey: pk, RowKey: rk, Err: fmt.Errorf("PartitionKey: %w", err)}
	}
	if err := keys.Validate(rk); err != nil {
		return &Error{Op: "encode", PartitionKey: pk, RowKey: rk, Err: fmt.Errorf("RowKey: %w", err)}
	}
	return nil
}

// appendValue writes one value; size is its size as the service counts it.
func appendValue(b []byte, k kind, v reflect.Value) ([]byte, int, error) {
	switch k {
	case kString:
		b, n := appendString(b, v.String())
		return b, 4 + 2*n, nil
	case kGUIDString:
		b, _ = appendString(b, v.String())
		return b, 16, nil
	case kBool:
		return strconv.AppendBool(b, v.Bool()), 1, nil
	case kInt32:
		if v.CanInt() {
			return strconv.AppendInt(b, v.Int(), 10), 4, nil
		}
		return strconv.AppendUint(b, v.Uint(), 10), 4, nil
	case kInt64:
		b = append(b, '"')
		if v.CanInt() {
			b = strconv.AppendInt(b, v.Int(), 10)
		} else {
			b = strconv.AppendUint(b, v.Uint(), 10)
		}
		return append(b, '"'), 8, nil
	case kDouble:
		return appendDouble(b, v.Float()), 8, nil
	case kTime:
		return appendTime(b, *v.Addr().Interface().(*time.Time)), 8, nil
	case kBinary:
		return appendBinary(b, v.Bytes()), 4 + v.Len(), nil
	case kGUID:
		var g [16]byte
		reflect.Copy(reflect.ValueOf(&g).Elem(), v)
		b = append(b, '"')
		return append(appendGUID(b, g), '"'), 16, nil
	case kJSON:
		j, err := json.Marshal(v.Interface())
		if err != nil {
			return b, 0, err
		}
		b, n := appendString(b, string(j))
		return b, 4 + 2*n, nil
	}
	return b, 0, fmt.Errorf("unknown kind %d", k)
}

// The range of Edm.DateTime on the service.
var (
	minDateTime = time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC)
	maxDateTime = time.Date(9999, 12, 31, 23, 59, 59, 999999900, time.UTC)
)

// unset reports whether a value is to be left out, so that it reads back
// as its zero value: the zero time.Time (outside Edm.DateTime's range), the
// empty GUID string, and a nil []byte (like a nil pointer; an empty non-nil
// []byte is an empty Edm.Binary). Other times and GUIDs must be valid: a
// time within 1601-01-01 to 9999-12-31 UTC, a well-formed GUID.
func unset(k kind, v reflect.Value) (skip bool, err error) {
	switch k {
	case kTime:
		t := *v.Addr().Interface().(*time.Time)
		if t.IsZero() {
			return true, nil
		}
		return false, dateTimeInRange(t)
	case kGUIDString:
		if v.String() == "" {
			return true, nil
		}
		_, err := parseGUID(v.String())
		return false, err
	case kBinary:
		return v.IsNil(), nil
	}
	return false, nil
}

func dateTimeInRange(t time.Time) error {
	if t.Before(minDateTime) || t.After(maxDateTime) {
		return fmt.Errorf("time %s is outside the Edm.DateTime range (1601-01-01 to 9999-12-31 UTC)", t.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

func appendDouble(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(b, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(b, `"-Infinity"`...)
	}
	return appendFloat(b, f)
}

// appendTime writes t in UTC with 100 ns precision, the service's format.
func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.UTC().Truncate(100).AppendFormat(b, "2006-01-02T15:04:05.0000000Z")
	return append(b, '"')
}

func appendBinary(b []byte, p []byte) []byte {
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, p)
	return append(b, '"')
}

// appendExtra writes the properties of an extra map, sorted by name.
func (c *codec) appendExtra(b []byte, m reflect.Value, e *encoded, only *fieldMask) ([]byte, error) {
	if m.IsNil() || m.Len() == 0 {
		return b, nil
	}
	props := m.Interface().(map[string]any)
	names := make([]string, 0, len(props))
	for name, v := range props {
		if v != nil {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		if _, typed := c.byName[name]; typed {
			continue // the struct field wins
		}
		if only != nil && !only.extra[name] {
			continue
		}
		if err := validPropertyName(name); err != nil {
			return b, &Error{Op: "encode", PartitionKey: e.pk, RowKey: e.rk, Err: err}
		}
		if !e.tk && strings.HasPrefix(name, reserved.PropertyPrefix) {
			return b, refused("encode", e.pk, e.rk, ErrInvalidEntity, "property name %q starts with %q (reserved.PropertyPrefix), which tablekit's patterns keep for their own properties", name, reserved.PropertyPrefix)
		}
		k, rv, err := dynamicKind(props[name])
		if err != nil {
			return b, refused("encode", e.pk, e.rk, ErrInvalidEntity, "property %s: %v", name, err)
		}
		if skip, err := unset(k, rv); err != nil {
			return b, refused("encode", e.pk, e.rk, ErrInvalidEntity, "property %s: %v", name, err)
		} else if skip {
			continue
		}
		b = append(b, ',')
		b, _ = appendString(b, name)
		b = append(b, ':')
		var size int
		if b, size, err = appendValue(b, k, rv); err != nil {
			return b, refused("encode", e.pk, e.rk, ErrInvalidEntity, "property %s: %v", name, err)
		}
		if err := e.checkValue(name, size); err != nil {
			return b, err
		}
		if edm, ok := edmNames[k]; ok {
			b = append(b, ',')
			b, _ = appendString(b, name+"@odata.type")
			b = append(b, `:"`+edm+`"`...)
		}
		e.size += 8 + 2*entitysize.UTF16Len(name) + size
		e.props++
	}
	return b, nil
}

// dynamicKind maps a property-bag value to its kind and an addressable
// reflect.Value holding it.
func dynamicKind(v any) (kind, reflect.Value, error) {
	switch x := v.(type) {
	case aztables.EDMInt64:
		v = int64(x)
	case aztables.EDMBinary:
		v = []byte(x)
	case aztables.EDMDateTime:
		v = time.Time(x)
	case aztables.EDMGUID:
		return kGUIDString, addressable(string(x)), nil
	case uint, uint64, uintptr:
		return 0, reflect.Value{}, errUnsigned
	}
	rv := addressable(v)
	k, err := kindOf(rv.Type())
	return k, rv, err
}

func addressable(v any) reflect.Value {
	rv := reflect.New(reflect.TypeOf(v)).Elem()
	rv.Set(reflect.ValueOf(v))
	return rv
}
