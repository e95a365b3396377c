package main

import (
	"os"
	"testing"
	"time"
)

// TestDiskMeasures runs the disk test's pieces small and checks that each
// gives a figure and leaves no file behind.
func TestDiskMeasures(t *testing.T) {
	dir := t.TempDir()
	block := make([]byte, 1<<20)
	for _, each := range []bool{false, true} {
		v, err := writeSeq(dir, block, 4, each)
		if err != nil || v <= 0 {
			t.Fatalf("writeSeq(each=%v) = %v, %v", each, v, err)
		}
	}
	n, err := small4KSyncs(dir, block[:4096], 100*time.Millisecond)
	if err != nil || n <= 0 {
		t.Fatalf("small4KSyncs = %v, %v", n, err)
	}
	if v, err := copyFloor(dir, block, 4); err != nil || v <= 0 {
		t.Fatalf("copyFloor = %v, %v", v, err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("the disk test left %d files in %s", len(left), dir)
	}
}
