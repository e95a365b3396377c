package main

// Tests for what the Dockerfile at the repository root relies on. Docker
// itself is not needed: the build it runs is repeated here.

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"umstore/internal/formats"
)

// TestStaticBuild builds the three commands as the Dockerfile does
// (CGO_ENABLED=0, -trimpath, the version set by -ldflags) and checks that
// they are static, as the scratch image needs, and report that version.
func TestStaticBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the three commands; skipped with -short")
	}
	const want = "v0.0.0-packaging-test"
	bin := t.TempDir()
	build := exec.Command("go", "build", "-trimpath",
		"-ldflags", "-s -w -X umstore/internal/version.Version="+want,
		"-o", bin+string(filepath.Separator),
		"umstore/cmd/umstored", "umstore/cmd/umpub", "umstore/cmd/umrcv")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build -trimpath failed: %v\n%s", err, out)
	}
	for _, name := range []string{"umstored", "umpub", "umrcv"} {
		path := filepath.Join(bin, name)
		if runtime.GOOS == "linux" {
			checkStatic(t, path)
		}
		out, err := exec.Command(path, "--version").Output()
		if err != nil {
			t.Errorf("%s --version: %v", name, err)
			continue
		}
		if err := checkVersionOutput(string(out), name+" "+want+" ("); err != nil {
			t.Errorf("%s --version: %v", name, err)
		}
	}
}

// checkStatic fails the test if the ELF binary at path asks for a dynamic
// loader, which a scratch image does not have.
func checkStatic(t *testing.T, path string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s is dynamically linked (it has an ELF interpreter); the scratch image cannot run it", filepath.Base(path))
		}
	}
}

// TestDockerfileMatchesGoMod checks that the Dockerfile's builder image is
// the Go version go.mod asks for, and that it builds what this test file
// checks.
func TestDockerfileMatchesGoMod(t *testing.T) {
	dockerfile, err := os.ReadFile(filepath.Join("..", "..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	goMod, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goVersion := ""
	for sc := bufio.NewScanner(bytes.NewReader(goMod)); sc.Scan(); {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "go" {
			goVersion = f[1]
		}
	}
	if goVersion == "" {
		t.Fatal("go.mod has no go line")
	}
	var builders []string
	for sc := bufio.NewScanner(bytes.NewReader(dockerfile)); sc.Scan(); {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && strings.EqualFold(f[0], "FROM") && strings.HasPrefix(f[1], "golang:") {
			builders = append(builders, strings.TrimPrefix(f[1], "golang:"))
		}
	}
	if len(builders) == 0 {
		t.Fatal("the Dockerfile has no FROM golang:VERSION stage")
	}
	for _, tag := range builders {
		rest, ok := strings.CutPrefix(tag, goVersion)
		if !ok || (rest != "" && rest[0] != '.' && rest[0] != '-') {
			t.Errorf("the Dockerfile builds with golang:%s but go.mod says go %s: change both together", tag, goVersion)
		}
	}
	for _, want := range []string{
		"CGO_ENABLED=0 go build -trimpath",
		"-X umstore/internal/version.Version=${VERSION}",
		"./cmd/umstored ./cmd/umpub ./cmd/umrcv",
		"FROM scratch",
		"USER 65532:65532",
		"VOLUME /var/lib/umstore",
		`ENTRYPOINT ["/usr/local/bin/umstored"]`,
	} {
		if !bytes.Contains(dockerfile, []byte(want)) {
			t.Errorf("the Dockerfile lacks %q", want)
		}
	}
}

func TestVersionCommand(t *testing.T) {
	for _, arg := range []string{"--version", "version"} {
		var out, errOut bytes.Buffer
		code := dispatch([]string{arg}, &out, &errOut)
		if code != 0 || errOut.Len() != 0 {
			t.Errorf("umstored %s: exit %d, stderr %q", arg, code, errOut.String())
		}
		if err := checkVersionOutput(out.String(), "umstored "); err != nil {
			t.Errorf("umstored %s: %v", arg, err)
		}
	}
}

// checkVersionOutput checks what --version printed: the build on a first
// line starting with prefix, then the formats the binary reads and writes
// (internal/formats), so that an operator can tell before an upgrade
// whether two binaries can share a group.
func checkVersionOutput(out, prefix string) error {
	first, rest, _ := strings.Cut(out, "\n")
	if !strings.HasPrefix(first, prefix) {
		return fmt.Errorf("first line %q, want it to start %q", first, prefix)
	}
	if rest != formats.String() {
		return fmt.Errorf("after the first line %q, want the formats:\n%s", rest, formats.String())
	}
	for _, want := range []string{"repository format: writes ", "snapshot stream: writes UMSNAP", "client protocol: version ", "command types: 1 InitGroup, "} {
		if !strings.Contains(rest, want) {
			return fmt.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	return nil
}
