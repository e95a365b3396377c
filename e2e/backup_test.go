package e2e_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// backupManifest is what the test reads of a backup's manifest.json.
type backupManifest struct {
	Groups []struct {
		Index        int    `json:"index"`
		GroupID      string `json:"group_id"`
		AppliedIndex uint64 `json:"applied_index"`
		File         string `json:"file"`
		Sources      []struct {
			Name      string `json:"name"`
			HighSeq   uint64 `json:"high_seq"`
			LowSeq    uint64 `json:"low_seq"`
			Count     uint64 `json:"count"`
			Receivers []struct {
				Name string `json:"name"`
				Seq  uint64 `json:"seq"`
			} `json:"receivers"`
		} `json:"sources"`
	} `json:"groups"`
}

// Issue 29: an online backup taken while umpub publishes at a steady rate
// is a consistent prefix of each group; it verifies; restored into a new
// deployment at other ports and run, every message up to each group's
// backed-up high is readable and intact, a publisher of the same source
// resumes at the next sequence number, a durable receiver resumes after
// its backed-up position, and the restored groups carry new identities
// naming the old ones. A backup with one flipped byte is
// refused by --verify and by restore, naming the file.
func TestBackupWhilePublishingAndRestore(t *testing.T) {
	if testing.Short() {
		t.Skip("long end-to-end test")
	}
	bin := binaries(t)
	d := planTwoHosts(t, bin)
	d.startAll(t)

	const total, rate = 3000, 500
	pub := exec.Command(filepath.Join(bin, "umpub"), "--deployment", d.deploy, "--source", "bk", "--count", fmt.Sprint(total), "--rate", fmt.Sprint(rate), "--size", "64", "--json", "--timeout", "2m")
	var pubOut, pubErr bytes.Buffer
	pub.Stdout, pub.Stderr = &pubOut, &pubErr
	if err := pub.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	// A durable receiver that has consumed 1..100: its position is backed
	// up, and it resumes after it in the restored deployment.
	if out, errOut, code := runTool(t, bin, "umrcv", "--deployment", d.deploy, "--source", "bk", "--name", "rc", "--to", "100"); code != 0 || strings.Count(out, "\n") != 100 {
		t.Fatalf("umrcv --name rc --to 100: exit %d, %d lines\n%s", code, strings.Count(out, "\n"), errOut)
	}
	bdir := filepath.Join(t.TempDir(), "backup")
	out, errOut, code := runTool(t, bin, "umstored", "backup", "--deployment", d.deploy, "--out", bdir)
	if code != 0 {
		t.Fatalf("backup: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "group 1 from") || !strings.Contains(errOut, "(100%)") {
		t.Errorf("backup showed no progress on stderr:\n%s", errOut)
	}
	if err := pub.Wait(); err != nil {
		t.Fatalf("umpub while the backup ran: %v\n%s\n%s", err, pubOut.String(), pubErr.String())
	}
	if out, errOut, code := runTool(t, bin, "umstored", "backup", "--verify", bdir); code != 0 {
		t.Fatalf("verify: exit %d\n%s\n%s", code, out, errOut)
	}
	m := readBackupManifest(t, bdir)
	high := map[int]uint64{}
	oldIDs := map[int]string{}
	var highest uint64
	for _, g := range m.Groups {
		oldIDs[g.Index] = g.GroupID
		for _, s := range g.Sources {
			if s.Name != "bk" {
				continue
			}
			// A prefix: every number from the first up to the high, none
			// missing, and publishing went on past it.
			if s.LowSeq != 1 || s.Count != s.HighSeq || s.HighSeq == 0 || s.HighSeq >= total {
				t.Errorf("group %d's backup of bk: low %d high %d count %d, want 1..high complete, below %d", g.Index, s.LowSeq, s.HighSeq, s.Count, total)
			}
			rc := uint64(0)
			for _, r := range s.Receivers {
				if r.Name == "rc" {
					rc = r.Seq
				}
			}
			if rc != 100 {
				t.Errorf("group %d's backup holds receiver rc at %d, want 100", g.Index, rc)
			}
			high[g.Index] = s.HighSeq
			highest = max(highest, s.HighSeq)
		}
	}
	if len(high) != 2 {
		t.Fatalf("the backup holds bk in %d groups, want 2: %+v", len(high), m)
	}
	d.a.stop()
	d.b.stop()

	// A damaged copy of the backup: one byte of group 1's file flipped.
	damaged := filepath.Join(t.TempDir(), "damaged")
	copyDir(t, bdir, damaged)
	flipByte(t, filepath.Join(damaged, "group-1.umsnap"))
	if _, errOut, code := runTool(t, bin, "umstored", "backup", "--verify", damaged); code != 1 || !strings.Contains(errOut, "group-1.umsnap") {
		t.Errorf("verify of a damaged backup: exit %d, want 1 naming group-1.umsnap\n%s", code, errOut)
	}

	// A new deployment at other ports.
	d2 := planTwoHostsBeside(t, bin, d, "restored host")
	if _, errOut, code := runTool(t, bin, "umstored", "restore", "--from", damaged, "--deployment", d2.deploy, "--host", "A", "--data-dir", d2.a.dataDir); code != 1 || !strings.Contains(errOut, "group-1.umsnap") {
		t.Errorf("restore of a damaged backup: exit %d, want 1 naming group-1.umsnap\n%s", code, errOut)
	}
	if ents, _ := os.ReadDir(d2.a.dataDir); len(ents) > 0 {
		t.Errorf("restore of a damaged backup wrote into %s", d2.a.dataDir)
	}
	for _, h := range []*host{d2.a, d2.b} {
		if out, errOut, code := runTool(t, bin, "umstored", "restore", "--from", bdir, "--deployment", d2.deploy, "--host", h.name, "--data-dir", h.dataDir); code != 0 {
			t.Fatalf("restore host %s: exit %d\n%s\n%s", h.name, code, out, errOut)
		}
	}
	t0 := time.Now()
	d2.startAll(t)
	t.Logf("restored deployment up in %s", time.Since(t0))

	for g, h := range high {
		out, errOut, code := runTool(t, bin, "umrcv", "--deployment", d2.deploy, "--source", "bk", "--group", fmt.Sprint(g), "--to", fmt.Sprint(h))
		if code != 0 {
			t.Fatalf("umrcv group %d: exit %d\n%s", g, code, errOut)
		}
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if uint64(len(lines)) != h {
			t.Fatalf("group %d after the restore: %d messages, want %d", g, len(lines), h)
		}
		for i, line := range lines {
			seq := i + 1
			head := fmt.Sprintf("%d bk #%d ", seq, seq)
			if !strings.HasPrefix(line, head) || len(line) != len(fmt.Sprint(seq))+1+64 {
				t.Fatalf("group %d message %d after the restore: %q", g, seq, line)
			}
		}
	}
	out, errOut, code = runTool(t, bin, "umrcv", "--deployment", d2.deploy, "--source", "bk", "--name", "rc", "--to", "110")
	if code != 0 || !strings.HasPrefix(out, "101 bk #101 ") || strings.Count(out, "\n") != 10 {
		t.Fatalf("durable receiver rc in the restored deployment: exit %d, want 101..110\n%s\n%s", code, out, errOut)
	}
	sum := publishJSON(t, bin, d2.deploy, "bk", 10)
	if sum.FirstSeq != highest+1 {
		t.Errorf("a publisher of bk in the restored deployment began at %d, want %d (one past the backup's highest)", sum.FirstSeq, highest+1)
	}
	sts, err := d2.a.status()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sts {
		if old := oldIDs[s.Group]; s.GroupID == old || !strings.HasSuffix(s.GroupID, "-restored-from-"+old) {
			t.Errorf("restored store %s has group identity %q, want a new one restored from %s", s.Name, s.GroupID, old)
		}
	}
}

func readBackupManifest(t *testing.T, dir string) backupManifest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m backupManifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.CopyFS(to, os.DirFS(from)); err != nil {
		t.Fatal(err)
	}
}

func flipByte(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x40
	if err := os.WriteFile(path, b, 0o640); err != nil {
		t.Fatal(err)
	}
}
