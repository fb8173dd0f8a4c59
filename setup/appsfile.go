package setup

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/hushpush/hush/internal/suggest"
	"github.com/hushpush/hush/payload"
)

// The apps file (HUSH_APPS_FILE, docs/configuration.md#apps) in YAML or
// JSON, one schema. It is decoded strictly by decodeApps: a key that is not
// a field, a key given twice or a value of the wrong kind is a problem
// named by its path and line, and decoding goes on past it, so that every
// problem of a file is reported at once.

// appsFile is the file's schema.
type appsFile struct {
	Apps []appEntry `yaml:"apps"`
}

// appEntry is one app of the file.
type appEntry struct {
	Name          string         `yaml:"name"`
	APNs          *apnsEntry     `yaml:"apns"`
	FCM           *fcmEntry      `yaml:"fcm"`
	WebPush       *webpushEntry  `yaml:"webpush"`
	Throttle      *throttleEntry `yaml:"throttle"`
	ThrottleGroup string         `yaml:"throttle_group"`
	// APITokens act for this app only (and for each other app that lists
	// the same token). Secret: a problem never quotes them.
	APITokens []string `yaml:"api_tokens,secret"`
}

// apnsEntry is an app's APNs credentials: the HUSH_APNS_* keys of one app.
type apnsEntry struct {
	KeyFile      string `yaml:"key_file"`
	KeyID        string `yaml:"key_id"`
	TeamID       string `yaml:"team_id"`
	CertFile     string `yaml:"cert_file"`
	CertPassword string `yaml:"cert_password"`
	Topic        string `yaml:"topic"`
	Production   bool   `yaml:"production"`
	Endpoint     string `yaml:"endpoint"`
	CAFile       string `yaml:"ca_file"`
	MaxRate      string `yaml:"max_rate"`
}

// fcmEntry is an app's FCM credentials: the HUSH_FCM_* keys of one app.
type fcmEntry struct {
	CredentialsFile string `yaml:"credentials_file"`
	ProjectID       string `yaml:"project_id"`
	Endpoint        string `yaml:"endpoint"`
	MaxRate         string `yaml:"max_rate"`
}

// webpushEntry is an app's Web Push credentials: the HUSH_WEBPUSH_* keys
// of one app.
type webpushEntry struct {
	PrivateKey string `yaml:"private_key"`
	PublicKey  string `yaml:"public_key"`
	Subject    string `yaml:"subject"`
	CAFile     string `yaml:"ca_file"`
	MaxRate    string `yaml:"max_rate"`
}

// throttleEntry is an app's limiter rules; a field left out (nil) is the
// HUSH_THROTTLE_* key's value.
type throttleEntry struct {
	Limits     *string           `yaml:"limits"`
	MinGap     *string           `yaml:"min_gap"`
	QuietHours *string           `yaml:"quiet_hours"`
	Categories map[string]string `yaml:"categories"` // nil: left out; empty: none
	MaxPending *int              `yaml:"max_pending"`
}

// AppsFileError is every problem of an apps file, in the file's order.
type AppsFileError struct {
	File     string
	Problems []*FieldError
}

func (e *AppsFileError) Error() string {
	if len(e.Problems) == 1 {
		return e.File + ": " + e.Problems[0].located()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d problems:", e.File, len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  " + p.located())
	}
	return b.String()
}

func (e *AppsFileError) Unwrap() []error {
	out := make([]error, len(e.Problems))
	for i, p := range e.Problems {
		out[i] = p
	}
	return out
}

// FieldError is one problem of an apps file. Path names the app and the
// field, apps[courier].apns.key_file (an app whose name is missing or
// malformed by its index, apps[2]); Line is its line in the file (0: none
// applies).
type FieldError struct {
	Path string
	Line int
	Err  error
}

func (e *FieldError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

// located is the problem with its line: "line 12: apps[courier]...".
func (e *FieldError) located() string {
	if e.Line > 0 {
		return "line " + strconv.Itoa(e.Line) + ": " + e.Error()
	}
	return e.Error()
}

// problems collects an apps file's problems and the line of every field
// it decoded.
type problems struct {
	list  []*FieldError
	lines map[string]int // path -> line of its value
}

func (ps *problems) add(path string, line int, err error) {
	ps.list = append(ps.list, &FieldError{Path: path, Line: line, Err: err})
}

func (ps *problems) addf(path string, line int, format string, args ...any) {
	ps.add(path, line, fmt.Errorf(format, args...))
}

// at adds a problem of the field at path, on the line it was read from.
func (ps *problems) at(path string, format string, args ...any) {
	ps.addf(path, ps.lines[path], format, args...)
}

// sorted returns the problems in the file's order (those without a line
// last), each once.
func (ps *problems) sorted() []*FieldError {
	out := slices.Clone(ps.list)
	slices.SortStableFunc(out, func(a, b *FieldError) int {
		switch {
		case a.Line == b.Line:
			return 0
		case a.Line == 0:
			return 1
		case b.Line == 0:
			return -1
		}
		return a.Line - b.Line
	})
	return slices.CompactFunc(out, func(a, b *FieldError) bool { return a.Error() == b.Error() && a.Line == b.Line })
}

// decodeApps decodes an apps file's text into f, adding every problem to
// ps.
func decodeApps(data []byte, f *appsFile, ps *problems) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
		ps.addf("apps", 0, "the file is empty: want apps: and a list of apps")
		return
	} else if err != nil {
		ps.add("apps", 0, fmt.Errorf("not YAML or JSON: %w", err))
		return
	}
	var more yaml.Node
	if err := dec.Decode(&more); err == nil {
		ps.addf("apps", more.Line, "a second YAML document (---): want one")
		return
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		ps.addf("apps", 0, "the file is empty: want apps: and a list of apps")
		return
	}
	root := doc.Content[0]
	decodeNode(root, "", reflect.ValueOf(f).Elem(), ps)
	if _, ok := ps.lines["apps"]; !ok && root.Kind == yaml.MappingNode {
		ps.addf("apps", root.Line, "missing: list the apps under apps:")
	}
}

// decodeNode decodes n into v, the field at path, strictly.
func decodeNode(n *yaml.Node, path string, v reflect.Value, ps *problems) {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if path != "" {
		ps.lines[path] = n.Line
	}
	null := n.Kind == yaml.ScalarNode && n.Tag == "!!null"
	switch v.Kind() {
	case reflect.Pointer:
		if null {
			return
		}
		p := reflect.New(v.Type().Elem())
		decodeNode(n, path, p.Elem(), ps)
		v.Set(p)
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			ps.addf(orRoot(path), n.Line, "want a mapping of %s, got %s", strings.Join(fieldNames(v.Type()), ", "), kindOf(n))
			return
		}
		names := fieldNames(v.Type())
		eachKey(n, path, ps, func(key string, k, val *yaml.Node) {
			i := slices.Index(names, key)
			if i < 0 {
				ps.addf(join(path, key), k.Line, "unknown field%s (the fields are %s)", didYouMean(key, names), strings.Join(names, ", "))
				return
			}
			if secret(v.Type().Field(i)) && val.Kind == yaml.ScalarNode && val.Tag != "!!null" {
				// Not quoted, as kindOf would: it may be a token.
				ps.addf(join(path, key), val.Line, "want a list, got a single value (not shown: it may be a secret)")
				return
			}
			decodeNode(val, join(path, key), v.Field(i), ps)
		})
	case reflect.Map:
		if null {
			v.Set(reflect.MakeMap(v.Type()))
			return
		}
		if n.Kind != yaml.MappingNode {
			ps.addf(path, n.Line, "want a mapping of names, got %s", kindOf(n))
			return
		}
		m := reflect.MakeMap(v.Type())
		eachKey(n, path, ps, func(key string, _, val *yaml.Node) {
			e := reflect.New(v.Type().Elem()).Elem()
			decodeNode(val, join(path, key), e, ps)
			m.SetMapIndex(reflect.ValueOf(key), e)
		})
		v.Set(m)
	case reflect.Slice:
		if null {
			return
		}
		if n.Kind != yaml.SequenceNode {
			ps.addf(path, n.Line, "want a list, got %s", kindOf(n))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		used := map[string]bool{}
		for i, e := range n.Content {
			decodeNode(e, path+"["+elementLabel(i, e, used)+"]", s.Index(i), ps)
		}
		v.Set(s)
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			ps.addf(path, n.Line, "want a string, got %s", kindOf(n))
		} else if !null {
			v.SetString(n.Value)
		}
	case reflect.Bool:
		b, err := strconv.ParseBool(n.Value)
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || err != nil {
			ps.addf(path, n.Line, "want true or false, got %s", kindOf(n))
			return
		}
		v.SetBool(b)
	case reflect.Int:
		i, err := strconv.Atoi(n.Value)
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" || err != nil {
			ps.addf(path, n.Line, "want an integer, got %s", kindOf(n))
			return
		}
		v.SetInt(int64(i))
	default:
		panic(fmt.Sprintf("setup: the apps file has a field of kind %s", v.Kind()))
	}
}

// eachKey calls f with each key of mapping n and its value; a key that is
// not a plain name, or is given twice, is a problem.
func eachKey(n *yaml.Node, path string, ps *problems, f func(key string, k, val *yaml.Node)) {
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
			ps.addf(orRoot(path), k.Line, "a key must be a plain name, got %s", kindOf(k))
			continue
		}
		if line, dup := seen[k.Value]; dup {
			ps.addf(join(path, k.Value), k.Line, "given twice (first on line %d)", line)
			continue
		}
		seen[k.Value] = k.Line
		f(k.Value, k, val)
	}
}

// elementLabel names the i-th element of a list: by its name when it has
// a well-formed one that no element before it has (an app:
// apps[courier]), else by its index (apps[2]). used holds the names
// given so far.
func elementLabel(i int, n *yaml.Node, used map[string]bool) string {
	name := ""
	if n.Kind == yaml.MappingNode {
		for j := 0; j+1 < len(n.Content); j += 2 {
			if k, v := n.Content[j], n.Content[j+1]; k.Value == "name" && v.Kind == yaml.ScalarNode {
				name = v.Value
			}
		}
	}
	return label(i, name, used)
}

// label is elementLabel's rule, for the i-th element named name.
func label(i int, name string, used map[string]bool) string {
	if !payload.ValidApp(name) || used[name] {
		return strconv.Itoa(i)
	}
	used[name] = true
	return name
}

// secret reports whether field f holds secrets: a list of them, whose
// problems never show a value.
func secret(f reflect.StructField) bool {
	_, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return opts == "secret"
}

// fieldNames are the file names of struct t's fields, in order.
func fieldNames(t reflect.Type) []string {
	out := make([]string, t.NumField())
	for i := range out {
		out[i], _, _ = strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
	}
	return out
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// orRoot is path, or "apps" for the file's top level.
func orRoot(path string) string {
	if path == "" {
		return "apps"
	}
	return path
}

// kindOf describes n for an error: a mapping, a list, or the scalar
// quoted.
func kindOf(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing"
		}
		return strconv.Quote(n.Value)
	}
	return "something else"
}

// didYouMean is ` (did you mean "x"?)` when a known name is near key
// (suggest.Nearest), else "".
func didYouMean(key string, names []string) string {
	if best := suggest.Nearest(key, names); best != "" {
		return ` (did you mean "` + best + `"?)`
	}
	return ""
}

// errNoApps is a file that lists no app.
var errNoApps = errors.New("no app listed: list at least one (or unset HUSH_APPS_FILE)")
