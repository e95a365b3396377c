package e2e_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Bit rot as an operator meets it: both hosts are stopped, bits are
// flipped inside stored payloads in two of the three stores of each group
// (wherever each payload sits in their files), some messages damaged in
// both of them, and the hosts are started again. All six stores come up,
// and each group alone (`umrcv --group N`) returns every message intact:
// no store serves a payload that fails its checksum, and a damaged leader
// serves intact copies from its healthy members instead, counting what it
// found.
func TestBitsFlippedAtRestInTwoStoresOfEachGroup(t *testing.T) {
	if testing.Short() {
		t.Skip("long end-to-end test")
	}
	begin := time.Now()
	bin := binaries(t)
	d := planTwoHosts(t, bin)
	d.startAll(t)
	const count = 3000
	if sum := publishJSON(t, bin, d.deploy, "rot", count); sum.Stable != count {
		t.Fatalf("umpub: %+v; want %d stable", sum, count)
	}
	dirs := storeDirs(t, d)
	waitFor(t, 60*time.Second, "every store holds every message", func() bool {
		held := 0
		for _, h := range []*host{d.a, d.b} {
			for _, s := range rotStatus(h) {
				if s.count("rot") == count {
					held++
				}
			}
		}
		return held == len(dirs)
	})
	d.a.stop()
	d.b.stop()
	t.Logf("published and stopped in %v", time.Since(begin).Round(time.Second))

	// In each group the first two stores by name are damaged: the first at
	// every message whose seq%5 is 0 or 1, the second at 1 or 2. Messages
	// with seq%5 == 1 are intact in the third store only.
	damagedIn := map[string][]int{}
	for g := 1; g <= 2; g++ {
		var names []string
		for name := range dirs {
			if strings.HasPrefix(name, fmt.Sprintf("G%dS", g)) {
				names = append(names, name)
			}
		}
		sort.Strings(names)
		if len(names) != 3 {
			t.Fatalf("group %d has stores %v, want 3", g, names)
		}
		damagedIn[names[0]] = []int{0, 1}
		damagedIn[names[1]] = []int{1, 2}
	}
	for name, residues := range damagedIn {
		damaged := func(seq int) bool { return seq >= 1 && seq <= count && contains(residues, seq%5) }
		flipped := flipPayloadBits(t, dirs[name], "rot", damaged)
		for seq := 1; seq <= count; seq++ {
			if damaged(seq) && flipped[seq] == 0 {
				t.Fatalf("%s: the payload of message %d was not found in its files", name, seq)
			}
		}
		t.Logf("%s: flipped a bit in stored copies of %d payloads", name, len(flipped))
	}

	d.a.start()
	d.b.start()
	d.waitAllUp(t, "all six stores are up after the bit flips")
	t.Logf("all six up again at %v", time.Since(begin).Round(time.Second))
	for _, g := range []string{"1", "2"} {
		out, errOut, code := runTool(t, bin, "umrcv", "--deployment", d.deploy, "--source", "rot", "--group", g)
		if code != 0 {
			t.Fatalf("umrcv --group %s: exit %d, %d lines; %s", g, code, strings.Count(out, "\n"), errOut)
		}
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != count {
			t.Fatalf("umrcv --group %s printed %d messages, want %d", g, len(lines), count)
		}
		for i, line := range lines {
			if want := fmt.Sprintf("%d %s", i+1, rotPayload(i+1)); line != want {
				t.Fatalf("umrcv --group %s line %d is %q, want %q", g, i+1, line, want)
			}
		}
	}
	// A damaged store that leads found damage and served copies instead.
	for _, h := range []*host{d.a, d.b} {
		for _, s := range rotStatus(h) {
			if s.State == "Leader" && damagedIn[s.Name] != nil {
				if dm := s.Repair.Damage; dm.Found == 0 || dm.Healed == 0 {
					t.Fatalf("%s leads with damaged files but reports damage %+v", s.Name, dm)
				}
			}
		}
	}
}

func contains(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// rotPayload is what umpub --size 64 sends for sequence number seq of
// source "rot" (cmd/umpub's generate).
func rotPayload(seq int) string {
	head := fmt.Sprintf("rot #%d ", seq)
	return head + strings.Repeat(".", 64-len(head))
}

// storeDirs maps each store's name to its data directory on either host.
func storeDirs(t *testing.T, d *twoHosts) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, h := range []*host{d.a, d.b} {
		entries, err := os.ReadDir(h.dataDir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() && strings.HasPrefix(e.Name(), "G") && !strings.Contains(e.Name(), ".") {
				out[e.Name()] = filepath.Join(h.dataDir, e.Name())
			}
		}
	}
	if len(out) != 6 {
		t.Fatalf("found store directories %v, want 6", out)
	}
	return out
}

// flipPayloadBits flips the lowest bit of the first digit of every copy,
// in every file under dir, of the payloads of source (as cmd/umpub
// generates them: "source #seq ...") whose seq is damaged, and returns how
// many copies of each it damaged.
func flipPayloadBits(t *testing.T, dir, source string, damaged func(seq int) bool) map[int]int {
	t.Helper()
	head := []byte(source + " #")
	flipped := map[int]int{}
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		changed := false
		for i := 0; ; {
			j := bytes.Index(data[i:], head)
			if j < 0 {
				break
			}
			digits := i + j + len(head)
			end := digits
			for end < len(data) && data[end] >= '0' && data[end] <= '9' {
				end++
			}
			i = end
			if end == digits || end >= len(data) || data[end] != ' ' {
				continue
			}
			seq, err := strconv.Atoi(string(data[digits:end]))
			if err != nil || !damaged(seq) {
				continue
			}
			data[digits] ^= 0x01
			flipped[seq]++
			changed = true
		}
		if changed {
			return os.WriteFile(path, data, 0o600)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return flipped
}

// rotStore is the part of a store's /v1/status this test reads.
type rotStore struct {
	Name    string `json:"name"`
	State   string `json:"state"`
	Sources []struct {
		Name  string `json:"name"`
		Count uint64 `json:"count"`
	} `json:"sources"`
	Repair struct {
		Damage struct {
			Found  uint64 `json:"found"`
			Healed uint64 `json:"healed"`
		} `json:"damage_at_rest"`
	} `json:"repair"`
}

func (s rotStore) count(source string) uint64 {
	for _, src := range s.Sources {
		if src.Name == source {
			return src.Count
		}
	}
	return 0
}

// rotStatus reads the host's stores' status; nil while it does not answer.
func rotStatus(h *host) []rotStore {
	body, err := httpGet("http://" + h.admin + "/v1/status")
	if err != nil {
		return nil
	}
	var st struct {
		Stores []rotStore `json:"stores"`
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		return nil
	}
	return st.Stores
}
