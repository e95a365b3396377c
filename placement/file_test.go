package placement

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// padded returns a valid deployment file padded with YAML comments to
// exactly size bytes.
func padded(t *testing.T, size int) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "valid", "spec-example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	b.Write(data)
	for b.Len() < size {
		line := "# " + strings.Repeat("x", min(70, size-b.Len()-3)) + "\n"
		if size-b.Len() < 3 {
			line = strings.Repeat("\n", size-b.Len())
		}
		b.WriteString(line)
	}
	if b.Len() != size {
		t.Fatalf("padded file is %d bytes, want %d", b.Len(), size)
	}
	return b.Bytes()
}

// Load reads at most MaxFileSize bytes: a file at the bound loads, anything
// larger (a long file, a sparse 50 MB file, a device that never ends) is
// refused at once with an error naming the file and the limit.
func TestLoadBoundsTheFileSize(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	sparse := filepath.Join(dir, "sparse.yaml")
	if f, err := os.Create(sparse); err != nil {
		t.Fatal(err)
	} else if err := f.Truncate(50 << 20); err != nil {
		t.Fatal(err)
	} else {
		f.Close()
	}
	tests := []struct {
		name    string
		path    string
		refused bool
	}{
		{"exactly the bound", write("full.yaml", padded(t, MaxFileSize)), false},
		{"one byte over", write("over.yaml", padded(t, MaxFileSize+1)), true},
		{"50 MB", sparse, true},
		{"/dev/zero", "/dev/zero", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := os.Stat(tt.path); err != nil {
				t.Skipf("%s: %v", tt.path, err)
			}
			done := make(chan error, 1)
			start := time.Now()
			go func() {
				_, err := Load(tt.path)
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("Load(%s) still reading after 10s", tt.path)
			}
			if !tt.refused {
				if err != nil {
					t.Fatalf("Load at the bound: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrFileTooLarge) {
				t.Fatalf("Load(%s) = %v, want ErrFileTooLarge", tt.path, err)
			}
			if msg := err.Error(); !strings.Contains(msg, tt.path) || !strings.Contains(msg, fmt.Sprint(MaxFileSize)) {
				t.Errorf("error %q does not name the file and the limit", msg)
			}
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("refusing took %v", took)
			}
		})
	}
}
