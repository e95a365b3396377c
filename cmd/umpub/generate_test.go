package main

import (
	"bytes"
	"compress/flate"
	"math/rand/v2"
	"strings"
	"testing"
)

// Generated payloads name their message and are exactly --size long; with
// --payload random the rest does not compress (benchmarks must not
// flatter a system that compresses), with text it is dots.
func TestGenerate(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name         string
		rng          *rand.Rand
		compressible bool
	}{{"text", nil, true}, {"random", rng, false}} {
		p := generate("src", 42, 1024, tc.rng)
		if len(p) != 1024 || !strings.HasPrefix(string(p), "src #42 ") {
			t.Fatalf("%s: %d bytes starting %q", tc.name, len(p), p[:10])
		}
		var z bytes.Buffer
		w, _ := flate.NewWriter(&z, flate.BestCompression)
		w.Write(p)
		w.Close()
		if got := z.Len() < len(p)/2; got != tc.compressible {
			t.Errorf("%s: 1024 bytes compress to %d", tc.name, z.Len())
		}
	}
	if a, b := generate("src", 1, 64, rng), generate("src", 1, 64, rng); bytes.Equal(a, b) {
		t.Error("two random payloads are equal")
	}
}
