package storehost

import (
	"net"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	"umstore/placement"
	"umstore/storegroup"
)

// Each store's configuration comes from the deployment: its group's
// members and the other groups with their addresses, its own directory,
// its host's address, and the daemon's options.
func TestConfigs(t *testing.T) {
	d := placement.Dev("127.0.0.1", 14000)
	d.Hosts[0].Address = "127.0.0.2"
	dir := t.TempDir()
	p := placement.DefaultPolicy()
	p.Retention.MaxMessages, p.Retention.MaxAge = 500, placement.Duration(time.Hour)
	p.Snapshot = placement.SnapshotPolicy{Threshold: 64, Interval: placement.Duration(time.Second), TrailingLogs: 0}
	base := BaseConfig(p)
	base.Lock.Standby = true
	base.ReceiverActivityTimeout, base.LogStore = 7*time.Second, storegroup.LogStoreBoltDB
	cfgs, err := Configs(d, "A", dir, base)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range cfgs {
		names = append(names, c.Name)
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", c.Name, err)
		}
	}
	if !reflect.DeepEqual(names, []string{"G1S1", "G1S2", "G2S1"}) {
		t.Fatalf("host A's stores: %v", names)
	}
	g2s1 := cfgs[2]
	onB := map[string]bool{"G1S3": true, "G2S2": true, "G2S3": true}
	member := func(name string, n int) storegroup.Member {
		addr := "127.0.0.2" // host A
		if onB[name] {
			addr = "127.0.0.1"
		}
		return storegroup.Member{Name: name, RaftAddr: net.JoinHostPort(addr, strconv.Itoa(14000+n)), ClientAddr: net.JoinHostPort(addr, strconv.Itoa(15000+n))}
	}
	wantMembers := []storegroup.Member{member("G2S1", 21), member("G2S2", 22), member("G2S3", 23)}
	wantOthers := []storegroup.PeerGroup{{Index: 1, Members: []storegroup.Member{member("G1S1", 11), member("G1S2", 12), member("G1S3", 13)}}}
	if g2s1.Group != 2 || !reflect.DeepEqual(g2s1.Members, wantMembers) || !reflect.DeepEqual(g2s1.OtherGroups, wantOthers) {
		t.Errorf("G2S1: group %d, members %+v, other groups %+v", g2s1.Group, g2s1.Members, g2s1.OtherGroups)
	}
	if g2s1.DataDir != filepath.Join(dir, "G2S1") || !g2s1.LocalIP.Equal(net.ParseIP("127.0.0.2")) || !g2s1.Lock.Standby {
		t.Errorf("G2S1: data dir %s, local IP %v, lock %+v", g2s1.DataDir, g2s1.LocalIP, g2s1.Lock)
	}
	def := storegroup.DefaultConfig()
	if g2s1.RetentionMaxBytes != def.RetentionMaxBytes || g2s1.RetentionMaxMessages != 500 || g2s1.RetentionMaxAge != time.Hour ||
		g2s1.SnapshotThreshold != 64 || g2s1.SnapshotInterval != time.Second || g2s1.TrailingLogs != 0 {
		t.Errorf("G2S1's policy settings: %+v", g2s1)
	}
	if g2s1.SourceActivityTimeout != def.SourceActivityTimeout || g2s1.RepairBytesPerSecond != def.RepairBytesPerSecond {
		t.Errorf("G2S1: source activity timeout %v, repair rate %d: want the defaults", g2s1.SourceActivityTimeout, g2s1.RepairBytesPerSecond)
	}
	if g2s1.ReceiverActivityTimeout != 7*time.Second || g2s1.LogStore != storegroup.LogStoreBoltDB || g2s1.PolicyDigest != p.Digest() {
		t.Errorf("G2S1: receiver activity timeout %v, log store %q, policy digest %s: want base's", g2s1.ReceiverActivityTimeout, g2s1.LogStore, g2s1.PolicyDigest)
	}
	if g2s1.Admission != nil || g2s1.Logger != nil {
		t.Error("Configs sets the admission or the logger, which are the caller's")
	}

	// A policy key that holds no setting stands for its default: the
	// timeout and the repair rate.
	p.SourceActivityTimeout, p.RepairRate = 0, 0
	if cfgs, _ := Configs(d, "B", dir, BaseConfig(p)); cfgs[0].SourceActivityTimeout != def.SourceActivityTimeout || cfgs[0].RepairBytesPerSecond != def.RepairBytesPerSecond {
		t.Errorf("zero policy keys: %+v", cfgs[0])
	}
}

func TestConfigsRefusals(t *testing.T) {
	d := placement.Dev("127.0.0.1", 14000)
	d.Hosts = append(d.Hosts, placement.Host{Name: "C", Address: "127.0.0.4"})
	for _, tc := range []struct{ host, want string }{
		{"Z", `host "Z" is not in the deployment "dev" (its hosts: A, B, C)`},
		{"C", `the deployment places no stores on host "C"`},
	} {
		if _, err := Configs(d, tc.host, t.TempDir(), BaseConfig(d.Policy)); err == nil || err.Error() != tc.want {
			t.Errorf("host %s: %v, want %q", tc.host, err, tc.want)
		}
	}
}
