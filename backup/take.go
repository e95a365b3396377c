package backup

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"umstore/internal/version"
	"umstore/placement"
	"umstore/wire"
)

// Options are Take's choices.
type Options struct {
	Dialer        *wire.Dialer // how to reach the stores (the deployment's TLS and token)
	OperatorToken string       // sent with each Backup; "" when the deployment has none
	// Progress, if set, receives a line now and then while a group's copy
	// arrives (umstored backup writes it to stderr).
	Progress io.Writer
	// Timeout bounds the wait for each frame of a copy.
	Timeout time.Duration
}

// Take backs up every group of d into dir, which must not exist or be
// empty: each group's copy comes from its leader, taken at one applied
// index while publishing goes on, and is checked to decode before the
// manifest is written last. A directory without a manifest is not a
// backup.
func Take(ctx context.Context, d *placement.Deployment, dir string, opts Options) (*Manifest, error) {
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return nil, fmt.Errorf("%s is not empty: a backup goes into a new directory", dir)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, err
	}
	m := &Manifest{Format: manifestFormat, BackupID: hex.EncodeToString(id[:]), Deployment: d.Name, Binary: version.String(), Policy: d.Policy.WithDefaults()}
	for _, g := range d.Groups {
		mg, err := takeGroup(ctx, d, g.Index, dir, opts)
		if err != nil {
			return nil, fmt.Errorf("group %d: %w", g.Index, err)
		}
		m.Groups = append(m.Groups, mg)
	}
	m.Taken = time.Now().UTC().Format(time.RFC3339)
	if err := m.write(dir); err != nil {
		return nil, fmt.Errorf("write the manifest: %w", err)
	}
	return m, nil
}

// takeGroup copies one group from its leader, asking its members in turn
// and following their redirects.
func takeGroup(ctx context.Context, d *placement.Deployment, index int, dir string, opts Options) (Group, error) {
	var addrs []string
	for _, ref := range d.Members(index) {
		addrs = append(addrs, ref.ClientAddr())
	}
	var errs []error
	for attempt := 0; attempt < 3*len(addrs)+3; attempt++ {
		addr := addrs[attempt%len(addrs)]
		for hop := 0; hop < 3 && addr != ""; hop++ {
			g, leader, err := copyFrom(ctx, addr, index, dir, opts)
			if err == nil {
				return g, nil
			}
			var refusal *wire.Error
			if errors.As(err, &refusal) && (refusal.Code == wire.CodeAuth || refusal.Code == wire.CodeForbidden) {
				return Group{}, fmt.Errorf("%s refused: %w", addr, err) // every store checks the same token
			}
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
			addr = leader
		}
		if ctx.Err() != nil {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	return Group{}, fmt.Errorf("no leader sent a copy: %w", errors.Join(errs...))
}

// errNotLeader: the store asked does not lead its group.
var errNotLeader = errors.New("not the leader")

// copyFrom asks the store at addr for its group's copy; if it does not
// lead, leader is where it says the leader is.
func copyFrom(ctx context.Context, addr string, index int, dir string, opts Options) (g Group, leader string, err error) {
	c, _, err := opts.Dialer.Dial(ctx, addr)
	if err != nil {
		return Group{}, "", err
	}
	defer c.Close()
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	_ = c.NetConn().SetDeadline(time.Now().Add(timeout))
	if err := c.Send(&wire.Backup{ReqID: 1, Token: opts.OperatorToken}); err != nil {
		return Group{}, "", err
	}
	path := filepath.Join(dir, groupFile(index))
	tmp := path + ".part"
	// Readable by the owner and its group only: it holds every message.
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o640)
	if err != nil {
		return Group{}, "", err
	}
	defer func() {
		f.Close()
		if err != nil {
			os.Remove(tmp)
		}
	}()
	h := sha256.New()
	w := io.MultiWriter(f, h)
	var got int64
	var first *wire.BackupChunk // what the copy stands for, as the first chunk said
	lastReport := time.Now()
	for {
		msg, err := c.Read()
		if err != nil {
			return Group{}, "", fmt.Errorf("the copy broke off after %d bytes: %w", got, err)
		}
		_ = c.NetConn().SetDeadline(time.Now().Add(timeout))
		switch msg := msg.(type) {
		case *wire.NotLeader:
			return Group{}, msg.Leader, errNotLeader
		case *wire.Error:
			return Group{}, "", msg
		case *wire.BackupChunk:
			if msg.Group != index {
				return Group{}, "", fmt.Errorf("the store sent group %d", msg.Group)
			}
			if first == nil {
				first = msg
			}
			// Every chunk stands for the same copy, and the copy is never
			// longer than it said: a store that sends more (or another
			// copy midway) is refused before its bytes reach the disk.
			if msg.Index != first.Index || msg.Term != first.Term || msg.GroupID != first.GroupID || msg.Size != first.Size ||
				msg.Size < 0 || int64(len(msg.Data)) > msg.Size-got {
				return Group{}, "", fmt.Errorf("the store sent a chunk of another copy or past the %d bytes it announced (index %d, %d bytes after %d)", first.Size, msg.Index, len(msg.Data), got)
			}
			if _, err := w.Write(msg.Data); err != nil {
				return Group{}, "", err
			}
			got += int64(len(msg.Data))
			if opts.Progress != nil && (msg.Last || time.Since(lastReport) > time.Second) {
				lastReport = time.Now()
				fmt.Fprintf(opts.Progress, "group %d from %s at index %d: %s of %s (%d%%)\n", index, msg.Store, msg.Index, mib(got), mib(msg.Size), 100*got/max(msg.Size, 1))
			}
			if !msg.Last {
				continue
			}
			if got != msg.Size {
				return Group{}, "", fmt.Errorf("the copy has %d bytes, the store said %d", got, msg.Size)
			}
			if err := f.Sync(); err != nil {
				return Group{}, "", err
			}
			if err := f.Close(); err != nil {
				return Group{}, "", err
			}
			if err := os.Rename(tmp, path); err != nil {
				return Group{}, "", err
			}
			g, err := describe(path, index, msg.Store)
			if err != nil {
				return Group{}, "", err
			}
			if g.SHA256 != hex.EncodeToString(h.Sum(nil)) || g.AppliedIndex != msg.Index || g.GroupID != msg.GroupID {
				return Group{}, "", fmt.Errorf("%s holds %s at index %d, the store sent %s at %d", path, g.GroupID, g.AppliedIndex, msg.GroupID, msg.Index)
			}
			return g, "", nil
		default:
			return Group{}, "", fmt.Errorf("%w: unexpected frame type %d", wire.ErrMalformed, msg.Type())
		}
	}
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// describe reads a group's file of a backup (group index, sent by store)
// into its manifest entry: its size and SHA-256, and what it holds, read
// back by decoding it.
func describe(path string, index int, store string) (Group, error) {
	st, err := os.Stat(path)
	if err != nil {
		return Group{}, err
	}
	sum, err := fileSHA256(path)
	if err != nil {
		return Group{}, err
	}
	dec, err := decode(path)
	if err != nil {
		return Group{}, fmt.Errorf("%s does not decode as a repository: %w", path, err)
	}
	return Group{Index: index, GroupID: dec.GroupID, Store: store, AppliedIndex: dec.AppliedIndex, AppliedTerm: dec.AppliedTerm,
		File: filepath.Base(path), Size: st.Size(), SHA256: sum, Sources: dec.Sources}, nil
}
