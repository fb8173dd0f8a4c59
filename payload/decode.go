package payload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Decode reads one job from r, strictly: field names must match exactly
// (encoding/json alone would accept "User_ID"), unknown and duplicate fields
// are rejected, values must have the right JSON type, and nothing but
// whitespace may follow the job.
//
// Field problems come back together as a *ValidationError, each naming its
// path ("recipients[0].devices[1].platfrom: unknown field"). Input that is
// not one JSON object returns an error wrapping ErrMalformed with the byte
// offset. An array or map longer than its limit (MaxRecipients,
// MaxDevices, MaxDataKeys) ends the reading there with a problem naming
// it, so a bad job costs what its first limit allows, not its size.
// Decode does not validate the job's content: call Validate.
func Decode(r io.Reader) (Job, error) {
	var j Job
	err := decodeStrict(r, &j, "job")
	return j, err
}

// DecodeBatch reads the body of POST /v1/notifications:batch from r, as
// strictly as Decode reads a job: one object whose only field is "jobs",
// spelt exactly and given once, an array of 1 to MaxBatchJobs values, and
// nothing after it. It returns each job's JSON, undecoded: each is read
// with Decode and answered on its own.
func DecodeBatch(r io.Reader) ([]json.RawMessage, error) {
	var b batchEnvelope
	if err := decodeStrict(r, &b, "batch"); err != nil {
		return nil, err
	}
	if n := len(b.Jobs); n == 0 {
		return nil, NewValidationError([]FieldError{{Field: "jobs",
			Message: fmt.Sprintf("%d jobs; a batch has 1 to %d", n, MaxBatchJobs)}}, 0)
	}
	return b.Jobs, nil
}

// batchEnvelope is the body of POST /v1/notifications:batch.
type batchEnvelope struct {
	Jobs []json.RawMessage `json:"jobs"`
}

// decodeStrict reads one JSON object of v's type from r: checkShape first,
// then encoding/json into v. what ("job") names the object in the
// messages of ErrMalformed.
func decodeStrict(r io.Reader, v any, what string) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("read %s: %w", what, err)
	}
	if err := checkShape(b, reflect.TypeOf(v).Elem(), what); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		// checkShape accepted the input, so this is a gap in it: still an
		// input problem, never a panic.
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return nil
}

var (
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	timeType        = reflect.TypeFor[time.Time]()
)

// errPastLimit ends a walk at an array or map longer than its limit: what
// follows is not read, so its cost is bounded by the limit, not the input.
var errPastLimit = errors.New("past a limit")

// checkShape walks the JSON token stream against type t, in document
// order, collecting a FieldError for every unknown or duplicate field and
// every value of the wrong type.
func checkShape(b []byte, t reflect.Type, what string) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	w := &shapeWalker{dec: dec, fields: map[reflect.Type]map[string]reflect.Type{}}
	tok, err := dec.Token()
	switch {
	case errors.Is(err, io.EOF):
		return fmt.Errorf("%w: empty input", ErrMalformed)
	case err != nil:
		return w.malformed(err)
	case tok != json.Delim('{'):
		return fmt.Errorf("%w: a %s is a JSON object, not %s", ErrMalformed, what, describeToken(tok))
	}
	switch err := w.object(t, ""); {
	case errors.Is(err, errPastLimit):
		return w.problems.err()
	case err != nil:
		return w.malformed(err)
	}
	end := dec.InputOffset()
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: trailing data after the %s, which ends at offset %d", ErrMalformed, what, end)
	}
	return w.problems.err()
}

type shapeWalker struct {
	dec      *json.Decoder
	fields   map[reflect.Type]map[string]reflect.Type
	problems problems
}

func (w *shapeWalker) malformed(err error) error {
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		return fmt.Errorf("%w at offset %d: %w", ErrMalformed, se.Offset, err)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: unexpected end of input at offset %d", ErrMalformed, w.dec.InputOffset())
	}
	return fmt.Errorf("%w at offset %d: %w", ErrMalformed, w.dec.InputOffset(), err)
}

// value checks the next JSON value against type t.
func (w *shapeWalker) value(t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return w.unmarshaler(t, path)
	}
	tok, err := w.dec.Token()
	if err != nil {
		return err
	}
	switch {
	case tok == nil:
		return nil // null leaves the zero value, as encoding/json does
	case isScalar(t.Kind()):
		if scalarFits(t, tok) {
			return nil
		}
	case t.Kind() == reflect.Struct && tok == json.Delim('{'):
		return w.object(t, path)
	case t.Kind() == reflect.Map && tok == json.Delim('{'):
		return w.mapValues(t.Elem(), path)
	case t.Kind() == reflect.Slice && tok == json.Delim('['):
		return w.array(t.Elem(), path)
	}
	w.problems.add(path, fmt.Sprintf("must be %s, not %s", describeType(t), describeToken(tok)))
	if _, ok := tok.(json.Delim); ok {
		return w.skipRest()
	}
	return nil
}

// unmarshaler decodes the next value into a fresh t, which reports the
// errors of t's own UnmarshalJSON (Duration, time.Time).
func (w *shapeWalker) unmarshaler(t reflect.Type, path string) error {
	var raw json.RawMessage
	if err := w.dec.Decode(&raw); err != nil {
		return err
	}
	err := json.Unmarshal(raw, reflect.New(t).Interface())
	switch {
	case err == nil:
	case t == timeType:
		w.problems.add(path, `must be an RFC 3339 time like "2026-11-21T18:00:00Z"`)
	default:
		w.problems.add(path, err.Error())
	}
	return nil
}

// scalarFits reports whether tok is a scalar that can be stored in a t.
func scalarFits(t reflect.Type, tok json.Token) bool {
	switch v := tok.(type) {
	case string:
		return t.Kind() == reflect.String
	case bool:
		return t.Kind() == reflect.Bool
	case json.Number:
		switch t.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			_, err := strconv.ParseInt(string(v), 10, t.Bits())
			return err == nil
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			_, err := strconv.ParseUint(string(v), 10, t.Bits())
			return err == nil
		case reflect.Float32, reflect.Float64:
			_, err := strconv.ParseFloat(string(v), t.Bits())
			return err == nil
		}
	}
	return false
}

// object checks the members of an object whose '{' was read. It remembers
// only the known fields it has seen, so many unknown ones cost no memory
// past the problems listed.
func (w *shapeWalker) object(t reflect.Type, path string) error {
	fields := w.fieldsOf(t)
	seen := map[string]bool{}
	for w.dec.More() {
		key, err := w.key()
		if err != nil {
			return err
		}
		fp := joinPath(path, key)
		ft, known := fields[key]
		switch {
		case seen[key]:
			w.problems.add(fp, "duplicate field")
			err = w.skipValue()
		case !known:
			w.problems.add(fp, unknownFieldMessage(key, fields))
			err = w.skipValue()
		default:
			err = w.value(ft, fp)
			seen[key] = true
		}
		if err != nil {
			return err
		}
	}
	_, err := w.dec.Token() // '}'
	return err
}

// mapValues checks a string-keyed map whose '{' was read.
func (w *shapeWalker) mapValues(elem reflect.Type, path string) error {
	seen := map[string]bool{}
	for w.dec.More() {
		if len(seen) == MaxDataKeys {
			w.problems.add(path, fmt.Sprintf("more than %d keys, the limit; the rest is not read", MaxDataKeys))
			return errPastLimit
		}
		key, err := w.key()
		if err != nil {
			return err
		}
		fp := path + "[" + strconv.Quote(key) + "]"
		if seen[key] {
			w.problems.add(fp, "duplicate key")
			err = w.skipValue()
		} else {
			err = w.value(elem, fp)
		}
		if err != nil {
			return err
		}
		seen[key] = true
	}
	_, err := w.dec.Token() // '}'
	return err
}

// array checks the elements of an array whose '[' was read.
func (w *shapeWalker) array(elem reflect.Type, path string) error {
	limit := arrayLimit(elem)
	for i := 0; w.dec.More(); i++ {
		if i == limit {
			w.problems.add(path, fmt.Sprintf("more than %d elements, the limit; the rest is not read", limit))
			return errPastLimit
		}
		if err := w.value(elem, path+"["+strconv.Itoa(i)+"]"); err != nil {
			return err
		}
	}
	_, err := w.dec.Token() // ']'
	return err
}

// arrayLimit is the most elements an array of elem may have.
func arrayLimit(elem reflect.Type) int {
	switch elem {
	case reflect.TypeFor[Recipient]():
		return MaxRecipients
	case reflect.TypeFor[Device]():
		return MaxDevices
	case reflect.TypeFor[json.RawMessage]():
		return MaxBatchJobs
	}
	return math.MaxInt
}

func (w *shapeWalker) key() (string, error) {
	tok, err := w.dec.Token()
	if err != nil {
		return "", err
	}
	key, ok := tok.(string)
	if !ok {
		return "", fmt.Errorf("object key is %s", describeToken(tok))
	}
	return key, nil
}

func (w *shapeWalker) skipValue() error {
	var raw json.RawMessage
	return w.dec.Decode(&raw)
}

// skipRest skips the rest of a container whose opening delimiter was read.
func (w *shapeWalker) skipRest() error {
	for depth := 1; depth > 0; {
		tok, err := w.dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return nil
}

// fieldsOf maps the JSON names of t's fields to their types, with embedded
// structs (Job's Content) inlined, as encoding/json does.
func (w *shapeWalker) fieldsOf(t reflect.Type) map[string]reflect.Type {
	if f, ok := w.fields[t]; ok {
		return f
	}
	f := map[string]reflect.Type{}
	for sf := range t.Fields() {
		if !sf.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if sf.Anonymous && name == "" && sf.Type.Kind() == reflect.Struct {
			for k, v := range w.fieldsOf(sf.Type) {
				f[k] = v
			}
			continue
		}
		if name == "" {
			name = sf.Name
		}
		f[name] = sf.Type
	}
	w.fields[t] = f
	return f
}

func unknownFieldMessage(key string, fields map[string]reflect.Type) string {
	for name := range fields {
		if strings.EqualFold(name, key) {
			return fmt.Sprintf("unknown field (did you mean %q?)", name)
		}
	}
	return "unknown field"
}

func joinPath(path, key string) string {
	if !isPlainKey(key) {
		key = strconv.Quote(key)
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func isPlainKey(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') {
			return false
		}
	}
	return true
}

func isScalar(k reflect.Kind) bool {
	switch k {
	case reflect.String, reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

func describeType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice:
		return "an array"
	default:
		return "an object"
	}
}

func describeToken(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '[' {
			return "an array"
		}
		return "an object"
	case string:
		return "a string"
	case json.Number:
		return "the number " + string(v)
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%v", tok)
}
