package placement

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"go.yaml.in/yaml/v3"

	"umstore/internal/atomicfile"
)

// MaxFileSize bounds a deployment file. A planned deployment file is a few
// kilobytes; the bound keeps a wrong path (a log, a device such as
// /dev/zero) from being read without end and decoded at many times its size.
const MaxFileSize = 1 << 20

// ErrFileTooLarge means a deployment file is larger than MaxFileSize.
var ErrFileTooLarge = errors.New("deployment file too large")

// Load reads and decodes the deployment file at path, fills in the defaults
// and validates it. Errors name the file, the line and the key that is
// wrong. A file larger than MaxFileSize is refused before it is decoded.
func Load(path string) (*Deployment, error) {
	data, err := readBounded(path, MaxFileSize)
	if err != nil {
		return nil, err
	}
	return Parse(data, path)
}

// readBounded reads the file at path, refusing one larger than limit bytes.
// It reads at most limit+1 bytes, whatever the file is: a regular file's
// size is checked first, and a device or pipe that never ends is cut there.
func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading deployment file: %w (create one with `umstored plan`)", err)
	}
	defer f.Close()
	tooLarge := func() error {
		return fmt.Errorf("%w: %s is larger than %d bytes, the limit for a deployment file (is it the file `umstored plan` wrote?)", ErrFileTooLarge, path, limit)
	}
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > limit {
		return nil, tooLarge()
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading deployment file %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, tooLarge()
	}
	return data, nil
}

// Parse decodes a deployment file held in memory, fills in the defaults
// ([Deployment.FillDefaults]) and validates it. source names it in error
// messages (usually the file name). Unknown keys are an error, so that a
// misspelt key is not silently ignored.
func Parse(data []byte, source string) (*Deployment, error) {
	if source == "" {
		source = "deployment"
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, decodeError(source, err, nil)
	}
	if len(root.Content) == 0 {
		return nil, fmt.Errorf("%s: the file is empty; it should hold a deployment (write one with `umstored plan`)", source)
	}
	idx := indexNode(&root)

	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	// Policy keys the file leaves out keep their defaults: the decoder
	// only sets the keys it finds.
	d := Deployment{Policy: DefaultPolicy()}
	if err := dec.Decode(&d); err != nil {
		return nil, decodeError(source, err, idx)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		line := extra.Line
		if err != nil {
			return nil, decodeError(source, err, idx)
		}
		return nil, fmt.Errorf("%s:%d: a second YAML document; a deployment file holds exactly one (remove the extra \"---\")", source, line)
	}
	d.source = source
	d.lines = idx.lines
	d.FillDefaults()
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return &d, nil
}

// Marshal encodes the deployment as YAML in the layout of the specification:
// hosts and stores one per line in flow style.
func (d *Deployment) Marshal() ([]byte, error) {
	var root yaml.Node
	if err := root.Encode(d); err != nil {
		return nil, fmt.Errorf("encoding deployment: %w", err)
	}
	flowStyle(&root)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&root); err != nil {
		return nil, fmt.Errorf("encoding deployment: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encoding deployment: %w", err)
	}
	return buf.Bytes(), nil
}

// flowStyle puts each host, each store and the stability block on one line,
// which keeps a deployment file short enough to read at a glance.
func flowStyle(root *yaml.Node) {
	for i := 0; i+1 < len(root.Content); i += 2 {
		key, val := root.Content[i], root.Content[i+1]
		switch key.Value {
		case "hosts":
			for _, h := range val.Content {
				h.Style = yaml.FlowStyle
			}
		case "groups":
			for _, g := range val.Content {
				for j := 0; j+1 < len(g.Content); j += 2 {
					if g.Content[j].Value == "stores" {
						for _, s := range g.Content[j+1].Content {
							s.Style = yaml.FlowStyle
						}
					}
				}
			}
		case "stability":
			val.Style = yaml.FlowStyle
		case "policy":
			for j := 1; j < len(val.Content); j += 2 {
				if val.Content[j].Kind == yaml.MappingNode {
					val.Content[j].Style = yaml.FlowStyle
				}
			}
		}
	}
}

// WriteFile validates the deployment and writes it, with its defaults filled
// in, to path atomically: it writes a temporary file in the same directory
// and renames it over path, so a reader never sees half a file. d itself is
// not changed.
func (d *Deployment) WriteFile(path string) error {
	if err := d.Validate(); err != nil {
		return fmt.Errorf("not writing %s: %w", path, err)
	}
	full := *d
	full.FillDefaults()
	data, err := full.Marshal()
	if err != nil {
		return err
	}
	if err := atomicfile.Write(path, data, 0o644); err != nil {
		return fmt.Errorf("writing deployment file: %w", err)
	}
	return nil
}
