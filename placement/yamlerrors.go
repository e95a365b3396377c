package placement

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// nodeIndex remembers where each key of a decoded document sits, so that
// errors can name both the line and the key path.
type nodeIndex struct {
	lines map[string]int // key path -> line
	spots []spot         // every key and scalar value, in document order
}

// spot is one key or value in the document.
type spot struct {
	line  int
	value string    // the key, or the scalar value ("" for lists and mappings)
	kind  yaml.Kind // yaml.ScalarNode for keys
	path  string
}

// indexNode walks a parsed document and records the line of every key path.
// Paths use dots for mapping keys and zero-based [i] for sequence items, the
// same spelling validation errors use.
func indexNode(root *yaml.Node) *nodeIndex {
	idx := &nodeIndex{lines: map[string]int{}}
	var walk func(n *yaml.Node, path string)
	walk = func(n *yaml.Node, path string) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, path)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				p := joinPath(path, k.Value)
				if _, seen := idx.lines[p]; !seen {
					idx.lines[p] = k.Line
				}
				idx.spots = append(idx.spots, spot{line: k.Line, value: k.Value, kind: yaml.ScalarNode, path: p})
				if v.Kind != yaml.ScalarNode {
					idx.spots = append(idx.spots, spot{line: v.Line, kind: v.Kind, path: p})
				}
				walk(v, p)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				p := fmt.Sprintf("%s[%d]", path, i)
				idx.lines[p] = c.Line
				if c.Kind != yaml.ScalarNode {
					idx.spots = append(idx.spots, spot{line: c.Line, kind: c.Kind, path: p})
				}
				walk(c, p)
			}
		case yaml.ScalarNode:
			idx.spots = append(idx.spots, spot{line: n.Line, value: n.Value, kind: yaml.ScalarNode, path: path})
		}
	}
	walk(root, "")
	return idx
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// find returns the path of the key or value of this kind, with this value,
// on this line.
func (idx *nodeIndex) find(line int, kind yaml.Kind, value string) (string, bool) {
	if idx == nil {
		return "", false
	}
	for _, s := range idx.spots {
		if s.line == line && s.kind == kind && s.value == value {
			return s.path, true
		}
	}
	return "", false
}

// lineOf returns the line of path, or of its nearest ancestor that is in the
// file (a missing key is reported at the entry that should hold it).
func lineOf(lines map[string]int, path string) int {
	for {
		if l, ok := lines[path]; ok {
			return l
		}
		if path == "" {
			return 0
		}
		cut := max(strings.LastIndexByte(path, '.'), strings.LastIndexByte(path, '['))
		if cut < 0 {
			path = ""
		} else {
			path = path[:cut]
		}
	}
}

var (
	syntaxErrRE    = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
	typeLineRE     = regexp.MustCompile(`^line (\d+): (.*)$`)
	unknownKeyRE   = regexp.MustCompile(`^field (.+) not found in type (\S+)$`)
	duplicateKeyRE = regexp.MustCompile(`^mapping key "(.*)" already defined at line (\d+)$`)
	unmarshalRE    = regexp.MustCompile("^cannot unmarshal (!!\\w+)(?: `(.*)`)? into (\\S+)$")
	placementType  = map[string]reflect.Type{
		"placement.Deployment": reflect.TypeFor[Deployment](),
		"placement.Host":       reflect.TypeFor[Host](),
		"placement.Group":      reflect.TypeFor[Group](),
		"placement.Store":      reflect.TypeFor[Store](),
		"placement.Stability":  reflect.TypeFor[Stability](),

		"placement.Policy":           reflect.TypeFor[Policy](),
		"placement.RetentionPolicy":  reflect.TypeFor[RetentionPolicy](),
		"placement.LockPolicy":       reflect.TypeFor[LockPolicy](),
		"placement.SnapshotPolicy":   reflect.TypeFor[SnapshotPolicy](),
		"placement.LeadershipPolicy": reflect.TypeFor[LeadershipPolicy](),
	}
	typeNoun = map[string]string{
		"placement.Deployment": "the top level",
		"placement.Host":       "a host",
		"placement.Group":      "a group",
		"placement.Store":      "a store",
		"placement.Stability":  "stability",

		"placement.Policy":           "policy",
		"placement.RetentionPolicy":  "policy.retention",
		"placement.LockPolicy":       "policy.lock",
		"placement.SnapshotPolicy":   "policy.snapshot",
		"placement.LeadershipPolicy": "policy.leadership",
	}
)

// decodeError turns the YAML library's errors into messages of the form
// "file:line: key.path: what is wrong", one per line.
func decodeError(source string, err error, idx *nodeIndex) error {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs := make([]string, 0, len(te.Errors))
		for _, e := range te.Errors {
			msgs = append(msgs, typeErrorMessage(source, e, idx))
		}
		return errors.New(strings.Join(msgs, "\n"))
	}
	msg := err.Error()
	if m := syntaxErrRE.FindStringSubmatch(msg); m != nil {
		// The YAML parser counts some of these lines from 0 and others from
		// 1, so the line is only "near".
		return fmt.Errorf("%s: not valid YAML near line %s: %s", source, m[1], m[2])
	}
	return fmt.Errorf("%s: not valid YAML: %s", source, strings.TrimPrefix(msg, "yaml: "))
}

func typeErrorMessage(source, e string, idx *nodeIndex) string {
	m := typeLineRE.FindStringSubmatch(e)
	if m == nil {
		return fmt.Sprintf("%s: %s", source, e)
	}
	line, _ := strconv.Atoi(m[1])
	where := fmt.Sprintf("%s:%d", source, line)
	rest := m[2]
	if u := unknownKeyRE.FindStringSubmatch(rest); u != nil {
		key, typ := u[1], u[2]
		path := key
		if p, ok := idx.find(line, yaml.ScalarNode, key); ok {
			path = p
		}
		noun, known := typeNoun[typ], knownKeys(typ)
		if noun == "" || known == "" {
			return fmt.Sprintf("%s: %s: unknown key", where, path)
		}
		return fmt.Sprintf("%s: %s: unknown key %q; %s has only: %s", where, path, key, noun, known)
	}
	if u := unmarshalRE.FindStringSubmatch(rest); u != nil {
		tag, value, into := u[1], u[2], u[3]
		path := ""
		kind := map[string]yaml.Kind{"!!seq": yaml.SequenceNode, "!!map": yaml.MappingNode}[tag]
		if kind == 0 {
			kind = yaml.ScalarNode
		}
		if p, ok := idx.find(line, kind, value); ok && p != "" {
			path = p + ": "
		}
		return fmt.Sprintf("%s: %s%s", where, path, describeMismatch(tag, value, into))
	}
	if u := duplicateKeyRE.FindStringSubmatch(rest); u != nil {
		path := u[1]
		if p, ok := idx.find(line, yaml.ScalarNode, u[1]); ok {
			path = p
		}
		return fmt.Sprintf("%s: %s: key %q given twice (first at line %s); keep one", where, path, u[1], u[2])
	}
	return fmt.Sprintf("%s: %s", where, rest)
}

// knownKeys lists the keys a deployment type accepts, from its yaml tags.
func knownKeys(typ string) string {
	t, ok := placementType[typ]
	if !ok {
		return ""
	}
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		keys = append(keys, name)
	}
	return strings.Join(keys, ", ")
}

// describeMismatch says in words what kind of value was expected.
func describeMismatch(tag, value, into string) string {
	var want string
	switch {
	case into == "int":
		want = "a whole number"
	case into == "string":
		want = "a single value (text)"
	case strings.HasPrefix(into, "[]"):
		want = "a list"
	case strings.HasPrefix(into, "placement."):
		want = "a mapping of keys (" + knownKeys(into) + ")"
	default:
		want = "a value of type " + into
	}
	got := map[string]string{
		"!!str": "text", "!!int": "a number", "!!float": "a number", "!!bool": "true/false",
		"!!seq": "a list", "!!map": "a mapping", "!!null": "nothing",
	}[tag]
	if got == "" {
		got = tag
	}
	if value != "" {
		return fmt.Sprintf("expected %s, got %s %q", want, got, value)
	}
	return fmt.Sprintf("expected %s, got %s", want, got)
}
