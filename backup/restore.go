package backup

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"umstore/placement"
	"umstore/storegroup"
)

// RestoredStore is one store RestoreHost laid out.
type RestoredStore struct {
	Store        string
	Group        int
	DataDir      string
	GroupID      string // the restored group's new identity
	From         string // the identity it was restored from
	AppliedIndex uint64
}

// RestoreHost verifies the backup in dir, then lays out every store that
// deployment d places on host under dataDir (dataDir/<store name>, as
// umstored run keeps them) from the backup's file of its group, so that
// umstored run starts each as a store with the backed-up state. Every host
// of d must be restored from the same backup before the groups can elect
// (each group's members all hold the same restored state). logStore is the
// raft log the stores keep (umstored run --log-store; "" for the default).
// A damaged backup is refused before anything is written; a data directory
// with state is never overwritten.
func RestoreHost(dir string, d *placement.Deployment, host, dataDir, logStore string) ([]RestoredStore, error) {
	m, err := Verify(dir)
	if err != nil {
		return nil, err
	}
	taken, err := time.Parse(time.RFC3339, m.Taken)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: taken %q: %v", ErrDamaged, filepath.Join(dir, ManifestFile), m.Taken, err)
	}
	byIndex := map[int]Group{}
	peers := map[string]string{}
	for _, g := range m.Groups {
		byIndex[g.Index] = g
		peers[g.GroupID] = storegroup.RestoredGroupID(m.BackupID, g.GroupID)
	}
	if _, ok := d.HostByName(host); !ok {
		return nil, fmt.Errorf("host %q is not in the deployment %q", host, d.Name)
	}
	refs := d.StoresOn(host)
	if len(refs) == 0 {
		return nil, fmt.Errorf("the deployment places no stores on host %q", host)
	}
	if len(d.Groups) != len(m.Groups) {
		return nil, fmt.Errorf("the backup holds %d groups (of deployment %q), deployment %q has %d: restore into a deployment with the backup's groups", len(m.Groups), m.Deployment, d.Name, len(d.Groups))
	}
	for _, g := range d.Groups {
		if _, ok := byIndex[g.Index]; !ok {
			return nil, fmt.Errorf("the backup holds no group %d of deployment %q (it holds %d groups of %q): restore into a deployment with the backup's groups", g.Index, d.Name, len(m.Groups), m.Deployment)
		}
	}
	for _, ref := range refs {
		if storegroup.DataDirHasState(filepath.Join(dataDir, ref.Store.Name)) {
			return nil, fmt.Errorf("data directory %s already holds a store's state: restore never overwrites one; move it aside and restore again", filepath.Join(dataDir, ref.Store.Name))
		}
	}
	var out []RestoredStore
	for _, ref := range refs {
		g := byIndex[ref.Group]
		var members []storegroup.Member
		for _, mr := range d.Members(ref.Group) {
			members = append(members, storegroup.Member{Name: mr.Store.Name, RaftAddr: mr.RaftAddr(), ClientAddr: mr.ClientAddr()})
		}
		f, err := os.Open(filepath.Join(dir, g.File))
		if err != nil {
			return out, err
		}
		sd := filepath.Join(dataDir, ref.Store.Name)
		index, _, err := storegroup.RestoreDataDir(sd, f, storegroup.Restore{GroupID: peers[g.GroupID], Peers: peers, Members: members, LogStore: logStore, SessionsFreedAt: taken.UnixNano()})
		f.Close()
		if err != nil {
			return out, fmt.Errorf("store %s: %w", ref.Store.Name, err)
		}
		out = append(out, RestoredStore{Store: ref.Store.Name, Group: ref.Group, DataDir: sd, GroupID: peers[g.GroupID], From: g.GroupID, AppliedIndex: index})
	}
	return out, nil
}
