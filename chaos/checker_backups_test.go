package main

import (
	"strings"
	"testing"
	"time"
)

// TestCheckBackups: a store that moved its files to a backup at start is a
// violation unless a corrupt-store fault on its host damaged them since its
// previous backup; a power cut of both hosts excuses nothing.
func TestCheckBackups(t *testing.T) {
	t0 := time.Now().Add(-time.Hour)
	backup := func(store, host string, at time.Duration) StoreBackup {
		return StoreBackup{Host: host, Incarnation: 2, Store: store, File: store + "/repo.db", Why: "repo.db: a page is not what it should be", At: t0.Add(at)}
	}
	fault := func(kind FaultKind, target string, at time.Duration) FaultRecord {
		return FaultRecord{Kind: kind, Target: target, Start: t0.Add(at), End: t0.Add(at + time.Second), Restored: t0.Add(at + 3*time.Second)}
	}
	cases := []struct {
		name    string
		faults  []FaultRecord
		backups []StoreBackup
		want    string // "" for no violation
	}{
		{
			name:    "damage after a power cut of every host",
			faults:  []FaultRecord{fault(PowerCutAll, "A|B", time.Minute)},
			backups: []StoreBackup{backup("G1S3", "B", time.Minute+2*time.Second)},
			want:    "store G1S3 (host B, incarnation 2) found its files damaged at start",
		},
		{
			name:    "the power cut is named",
			faults:  []FaultRecord{fault(KillHost, "B", 10*time.Second), fault(PowerCutAll, "A|B", time.Minute)},
			backups: []StoreBackup{backup("G1S3", "B", time.Minute+2*time.Second)},
			want:    "after power-cut-all from",
		},
		{
			name:    "damage after a lost-writes of the host",
			faults:  []FaultRecord{fault(LostWrites, "A", time.Minute)},
			backups: []StoreBackup{backup("G1S1", "A", time.Minute+2*time.Second)},
			want:    "store G1S1 (host A",
		},
		{
			name:    "corrupt-store on the host damaged it",
			faults:  []FaultRecord{fault(CorruptStore, "A", time.Minute)},
			backups: []StoreBackup{backup("G1S1", "A", time.Minute+2*time.Second)},
		},
		{
			name:    "corrupt-store on the other host does not excuse it",
			faults:  []FaultRecord{fault(CorruptStore, "B", time.Minute)},
			backups: []StoreBackup{backup("G1S1", "A", time.Minute+2*time.Second)},
			want:    "store G1S1 (host A",
		},
		{
			name:    "corrupt-store after the finding does not excuse it",
			faults:  []FaultRecord{fault(CorruptStore, "A", 2*time.Minute)},
			backups: []StoreBackup{backup("G1S1", "A", time.Minute)},
			want:    "store G1S1 (host A",
		},
		{
			name:   "one corrupt-store excuses one finding per store",
			faults: []FaultRecord{fault(CorruptStore, "A", time.Minute), fault(PowerCutAll, "A|B", 2*time.Minute)},
			backups: []StoreBackup{
				backup("G1S1", "A", time.Minute+2*time.Second),
				backup("G1S1", "A", 2*time.Minute+2*time.Second),
			},
			want: "at " + t0.Add(2*time.Minute+2*time.Second).Format("15:04:05.000"),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := healthy(10)
			for _, f := range tc.faults {
				h.Fault(f)
			}
			h.AddBackups(tc.backups)
			var got []Violation
			for _, v := range Check(h).Violations {
				if v.Rule == "damage" {
					got = append(got, v)
				}
			}
			if tc.want == "" {
				if len(got) != 0 {
					t.Fatalf("want no damage violation, got %v", got)
				}
				return
			}
			if len(got) != 1 || !strings.Contains(got[0].Detail, tc.want) {
				t.Fatalf("want one damage violation containing %q, got %v", tc.want, got)
			}
		})
	}
}

// TestScanHostLogBackups: the scan finds the store's line when it moves
// damaged files to a backup at start.
func TestScanHostLogBackups(t *testing.T) {
	log := `### chaos: incarnation=2
time=2026-12-04T22:44:01.542Z level=ERROR msg="damaged files: the store cannot use repo.db; it moved its data directory's files to a numbered backup (nothing deleted) and rejoins its group empty" store=G1S3 group=1 file=/d/G1S3/repo.db backup=/d/G1S3.backup-1 err="repo.db: torn page"
`
	got, err := scanHostLog("B", strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Backups) != 1 {
		t.Fatalf("backups = %+v, want one", got.Backups)
	}
	b := got.Backups[0]
	if b.Store != "G1S3" || b.Host != "B" || b.Incarnation != 2 || b.File != "/d/G1S3/repo.db" || b.Why != "repo.db: torn page" || b.At.IsZero() {
		t.Fatalf("backup = %+v", b)
	}
}
