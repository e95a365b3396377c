package placement

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// MemberSecretFileFor is the name of the member secret file that belongs
// beside the deployment file deploymentPath: its base name with the
// extension replaced by ".member-secret" (deployment.yaml:
// deployment.member-secret). The deployment refers to it by this relative
// name, so the two files travel together.
func MemberSecretFileFor(deploymentPath string) string {
	base := filepath.Base(deploymentPath)
	if stem := strings.TrimSuffix(base, filepath.Ext(base)); stem != "" {
		base = stem
	}
	if base == "." || base == string(filepath.Separator) {
		base = "deployment"
	}
	return base + ".member-secret"
}

// WithMemberSecretFile returns the deployment file data with
// security.member-secret-file set to ref, the rest of the file (comments,
// key order, flow or block style) left as it was, so an operator's edits
// survive. The result is parsed and validated before it is returned;
// source names the file in errors.
func WithMemberSecretFile(data []byte, source, ref string) ([]byte, error) {
	if source == "" {
		source = "deployment"
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, decodeError(source, err, nil)
	}
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: not a deployment file (a YAML mapping with version, hosts and groups); write one with `umstored plan`", source)
	}
	top := root.Content[0]
	sec := mappingValue(top, "security")
	switch {
	case sec == nil:
		sec = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		top.Content = append(top.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "security"}, sec)
	case sec.Kind == yaml.ScalarNode && sec.Tag == "!!null":
		// "security:" with nothing under it.
		*sec = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: sec.Line, Column: sec.Column}
	case sec.Kind != yaml.MappingNode:
		return nil, fmt.Errorf("%s:%d: security is not a mapping; fix it by hand (keys: member-secret-file, tls, token-file)", source, sec.Line)
	}
	value := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: ref}
	if v := mappingValue(sec, "member-secret-file"); v != nil {
		*v = *value
	} else {
		sec.Content = append(sec.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "member-secret-file"}, value)
	}
	return encodeEdited(&root, source)
}

// mappingValue returns the value of key in the mapping node m, or nil.
func mappingValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// encodeEdited writes an edited deployment file's YAML tree back out, with
// its comments, and checks that the result still parses as a deployment.
func encodeEdited(root *yaml.Node, source string) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, fmt.Errorf("%s: encoding the deployment: %w", source, err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("%s: encoding the deployment: %w", source, err)
	}
	out := buf.Bytes()
	if _, err := Parse(out, source); err != nil {
		return nil, err
	}
	return out, nil
}
