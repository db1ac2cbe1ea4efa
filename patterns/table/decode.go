package table

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/tablekit/tablekit/internal/reserved"
)

// stringEDM is the annotation a JSON string value must carry for each kind
// of field ("" where a string is not acceptable at all).
var stringEDM = [...]string{
	kString: "Edm.String", kGUIDString: "Edm.Guid", kInt64: "Edm.Int64", kDouble: "Edm.Double",
	kTime: "Edm.DateTime", kBinary: "Edm.Binary", kGUID: "Edm.Guid", kJSON: "Edm.String",
}

var propsPool = sync.Pool{New: func() any { s := make([]property, 0, 32); return &s }}

// decode parses entity JSON into v (an addressable struct value). etag,
// when not empty, overrides the body's odata.etag (GetEntity's header).
// When keys is not nil it receives the stored PartitionKey, RowKey and
// ETag.
func (c *codec) decode(data []byte, v reflect.Value, etag azcore.ETag, keys *[3]string, skipReserved bool) error {
	s, err := scanEntity(data, etag)
	defer s.release()
	if err != nil {
		return err
	}
	if skipReserved && reservedRow(s.props) {
		return errReservedRow
	}
	return c.decodeProps(s.props, v, s.etag, keys, true, "")
}

// scanned is an entity's scanned properties, in a pooled slice that
// release returns.
type scanned struct {
	pp    *[]property
	props []property
	etag  azcore.ETag
}

// scanEntity scans entity JSON. etag, when not empty, overrides the body's
// odata.etag. Call release when done with the properties, also on error.
func scanEntity(data []byte, etag azcore.ETag) (scanned, error) {
	pp := propsPool.Get().(*[]property)
	props, bodyETag, err := scanObject(data, (*pp)[:0])
	*pp = props
	if etag == "" {
		etag = azcore.ETag(bodyETag)
	}
	return scanned{pp: pp, props: props, etag: etag}, err
}

func (s scanned) release() {
	clear(*s.pp)
	*s.pp = (*s.pp)[:0]
	propsPool.Put(s.pp)
}

// decodeProps sets v from scanned properties: with fields, every property
// (those without a field into the extra map, except the one named skip);
// without, only the keys, Timestamp and Meta (for a value an upgrade
// function built).
func (c *codec) decodeProps(props []property, v reflect.Value, etag azcore.ETag, keys *[3]string, fields bool, skip string) error {
	var extra map[string]any
	var writes string
	var storedKeys [2]string
	if keys != nil {
		keys[2] = string(etag) // the stored keys, then the ETag
	}
	for i := range props {
		p := &props[i]
		if j, ok := c.byName[string(p.name)]; ok {
			if !fields {
				continue
			}
			f := &c.fields[j]
			if err := setValue(v.FieldByIndex(f.index), f, p); err != nil {
				return fmt.Errorf("property %s: %w", f.name, err)
			}
			continue
		}
		switch string(p.name) {
		case "PartitionKey", "RowKey":
			at, pos := c.pk, 0
			if p.name[0] == 'R' {
				at, pos = c.rk, 1
			}
			if p.value.kind != 's' || p.edm != "" && p.edm != "Edm.String" {
				return fmt.Errorf("property %s: stored value is not an Edm.String", p.name)
			}
			if at != nil || keys != nil || c.meta != nil {
				s := stringOf(p.value)
				storedKeys[pos] = s
				if at != nil {
					v.FieldByIndex(at).SetString(s)
				}
				if keys != nil {
					keys[pos] = s
				}
			}
			continue
		case "Timestamp":
			if c.timestamp != nil || c.meta != nil {
				ts, err := parseTime(p.value)
				if err != nil {
					return fmt.Errorf("property Timestamp: %w", err)
				}
				if c.timestamp != nil {
					*v.FieldByIndex(c.timestamp).Addr().Interface().(*time.Time) = ts
				}
				if c.meta != nil {
					metaOf(v, c.meta).Timestamp = ts
				}
			}
			continue
		case reserved.WriteProperty:
			if p.value.kind == 's' {
				writes = stringOf(p.value)
			}
			continue
		}
		if fields && c.extra != nil && p.value.kind != 'z' && string(p.name) != skip {
			val, err := dynamicValue(p)
			if err != nil {
				return fmt.Errorf("property %s: %w", p.name, err)
			}
			if extra == nil {
				extra = make(map[string]any, len(props))
			}
			extra[string(p.name)] = val
		}
	}
	if c.meta != nil {
		m := metaOf(v, c.meta)
		m.ETag, m.writes, m.pk, m.rk = etag, cleanHistory(writes), storedKeys[0], storedKeys[1]
	}
	if fields && c.extra != nil {
		v.FieldByIndex(c.extra).Set(reflect.ValueOf(extra))
	}
	return nil
}

// metaOf returns the Meta field at index of struct value v.
func metaOf(v reflect.Value, index []int) *Meta {
	return v.FieldByIndex(index).Addr().Interface().(*Meta)
}

// setValue stores one property into a struct field.
func setValue(fv reflect.Value, f *field, p *property) error {
	if p.value.kind == 'z' {
		fv.SetZero()
		return nil
	}
	if f.ptr {
		if fv.IsNil() {
			fv.Set(reflect.New(fv.Type().Elem()))
		}
		fv = fv.Elem()
	}
	val := p.value
	mismatch := func() error {
		stored := p.edm
		if stored == "" {
			stored = map[byte]string{'s': "Edm.String", 'n': "a number", 't': "Edm.Boolean", 'f': "Edm.Boolean"}[val.kind]
		}
		return fmt.Errorf("stored value is %s, the field is %v", stored, fv.Type())
	}
	// The stored type must fit the field: a JSON string is typed by its
	// annotation (none means Edm.String); a number may widen Int32 to
	// Int64 or Double, never the other way.
	switch want := stringEDM[f.kind]; {
	case val.kind == 's' && p.edm != want && !(want == "Edm.String" && p.edm == ""):
		return mismatch()
	case val.kind == 's' && want == "":
		return mismatch()
	case val.kind != 's' && p.edm != "" && !scalarFits(f.kind, val.kind, p.edm):
		return mismatch()
	}
	switch f.kind {
	case kString, kGUIDString:
		if val.kind != 's' {
			return mismatch()
		}
		fv.SetString(stringOf(val))
	case kBool:
		if val.kind != 't' && val.kind != 'f' {
			return mismatch()
		}
		fv.SetBool(val.kind == 't')
	case kInt32, kInt64:
		if val.kind != 'n' && val.kind != 's' || f.kind == kInt32 && val.kind != 'n' {
			return mismatch()
		}
		if fv.CanInt() {
			n, err := strconv.ParseInt(string(val.raw), 10, fv.Type().Bits())
			if err != nil {
				return fmt.Errorf("%s does not fit %v: %w", val.raw, fv.Type(), mismatchOr(err))
			}
			fv.SetInt(n)
		} else {
			n, err := strconv.ParseUint(string(val.raw), 10, fv.Type().Bits())
			if err != nil {
				return fmt.Errorf("%s does not fit %v: %w", val.raw, fv.Type(), mismatchOr(err))
			}
			fv.SetUint(n)
		}
	case kDouble:
		x, err := parseDouble(val)
		if err != nil {
			return err
		}
		fv.SetFloat(x)
	case kTime:
		t, err := parseTime(val)
		if err != nil {
			return err
		}
		*fv.Addr().Interface().(*time.Time) = t // no boxing of t
	case kBinary:
		if val.kind != 's' {
			return mismatch()
		}
		b, err := base64.StdEncoding.AppendDecode([]byte{}, unescapedBytes(val))
		if err != nil {
			return fmt.Errorf("invalid Edm.Binary: %w", err)
		}
		fv.SetBytes(b) // never nil: nil means no property
	case kGUID:
		if val.kind != 's' {
			return mismatch()
		}
		g, err := parseGUID(stringOf(val))
		if err != nil {
			return err
		}
		reflect.Copy(fv, reflect.ValueOf(g[:]))
	case kJSON:
		if val.kind != 's' {
			return mismatch()
		}
		ptr := reflect.New(fv.Type())
		if err := json.Unmarshal(unescapedBytes(val), ptr.Interface()); err != nil {
			return err
		}
		fv.Set(ptr.Elem())
	}
	return nil
}

// scalarFits reports whether a JSON number or boolean annotated edm may be
// stored in a field of kind k: an annotation may widen Int32 to Int64 or
// Double, never the other way, and true/false are only Edm.Boolean.
func scalarFits(k kind, jsonKind byte, edm string) bool {
	switch {
	case jsonKind == 't' || jsonKind == 'f':
		return edm == "Edm.Boolean"
	case edm == "Edm.Int32":
		return k == kInt32 || k == kInt64 || k == kDouble
	case edm == "Edm.Int64":
		return k == kInt64
	case edm == "Edm.Double":
		return k == kDouble
	}
	return false
}

func mismatchOr(err error) error {
	if ne, ok := err.(*strconv.NumError); ok {
		return ne.Err
	}
	return err
}

func unescapedBytes(v jsonValue) []byte {
	if v.esc {
		return unescape(v.raw)
	}
	return v.raw
}

func parseDouble(v jsonValue) (float64, error) {
	switch {
	case v.kind == 'n':
		return strconv.ParseFloat(string(v.raw), 64)
	case v.kind == 's':
		switch string(v.raw) {
		case "NaN":
			return math.NaN(), nil
		case "Infinity", "INF":
			return math.Inf(1), nil
		case "-Infinity", "-INF":
			return math.Inf(-1), nil
		}
		// Only JSON number notation: ParseFloat would also take "Inf",
		// "0x1p4", "+1" and "1_0", which the service never sends.
		if len(v.raw) == 0 || v.esc {
			return 0, fmt.Errorf("invalid Edm.Double %q", v.raw)
		}
		if n, err := scanNumber(v.raw, 0); err != nil || n != len(v.raw) {
			return 0, fmt.Errorf("invalid Edm.Double %q", v.raw)
		}
		return strconv.ParseFloat(string(v.raw), 64)
	}
	return 0, fmt.Errorf("stored value is not a number")
}

func parseTime(v jsonValue) (time.Time, error) {
	if v.kind != 's' {
		return time.Time{}, fmt.Errorf("stored value is not an Edm.DateTime")
	}
	var text string
	if !v.esc && v.ascii && len(v.raw) > 0 {
		// Parse a view of the bytes: time.Parse keeps no reference to its
		// input when it succeeds; a failure is reported from a copy.
		text = unsafe.String(&v.raw[0], len(v.raw))
	} else {
		text = stringOf(v)
	}
	t, err := time.Parse(time.RFC3339Nano, text)
	if err != nil {
		return time.Time{}, fmt.Errorf("invalid Edm.DateTime %q", string(v.raw))
	}
	return t.UTC(), nil
}

// dynamicValue converts a stored property to its Go value for a property
// bag: by annotation, else by JSON type (a whole number that fits is int32,
// as the service types unannotated numbers).
func dynamicValue(p *property) (any, error) {
	v := p.value
	switch p.edm {
	case "Edm.Binary", "Edm.Guid", "Edm.DateTime", "Edm.String":
		if v.kind != 's' {
			return nil, fmt.Errorf("stored value is not an %s", p.edm)
		}
	case "Edm.Boolean":
		if v.kind != 't' && v.kind != 'f' {
			return nil, fmt.Errorf("stored value is not an %s", p.edm)
		}
	case "Edm.Int32", "Edm.Int64", "Edm.Double":
		if v.kind != 'n' && v.kind != 's' || p.edm == "Edm.Int32" && v.kind != 'n' {
			return nil, fmt.Errorf("stored value is not an %s", p.edm)
		}
	}
	switch p.edm {
	case "Edm.Int64":
		return strconv.ParseInt(stringOf(v), 10, 64)
	case "Edm.Double":
		return parseDouble(v)
	case "Edm.DateTime":
		return parseTime(v)
	case "Edm.Binary":
		// Never nil: a nil []byte is written as no property, an empty one
		// as an empty Edm.Binary, so that a bag read and written back keeps
		// the property.
		return base64.StdEncoding.AppendDecode([]byte{}, unescapedBytes(v))
	case "Edm.Guid":
		return parseGUID(stringOf(v))
	}
	switch v.kind {
	case 's':
		return stringOf(v), nil
	case 't':
		return true, nil
	case 'f':
		return false, nil
	case 'n':
		if n, err := strconv.ParseInt(string(v.raw), 10, 32); err == nil {
			return int32(n), nil
		}
		return strconv.ParseFloat(string(v.raw), 64)
	}
	return nil, nil
}

// errReservedRow is what decode returns, when asked to skip reserved rows,
// for a row whose RowKey starts with "~tk~"; v is left unchanged.
var errReservedRow = errors.New("reserved row")

// reservedRow reports whether the scanned entity's RowKey starts with
// "~tk~".
func reservedRow(props []property) bool {
	for i := range props {
		if p := &props[i]; string(p.name) == "RowKey" {
			switch {
			case p.value.kind != 's':
				return false
			case !p.value.esc:
				return bytes.HasPrefix(p.value.raw, []byte(reserved.Prefix))
			default:
				return strings.HasPrefix(stringOf(p.value), reserved.Prefix)
			}
		}
	}
	return false
}
