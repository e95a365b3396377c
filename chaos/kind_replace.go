package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// ReplaceHost replaces a host by a server at another address, as
// docs/operations.md ("Replacing a host") tells an operator to: the host's
// daemon is killed (-9) and its data directory wiped (the old server is
// gone with its disk), a deployment file placing it at a new loopback
// address is written with `umstored plan --deployment FILE --host
// NAME=ADDRESS`, and the host's daemon is started there, empty, with that
// file and the same member secret file, while the other host keeps running
// with the file it had. Its stores must tell their groups where they
// listen now, be accepted (nothing answers at their old addresses), catch
// up one per group at a time before they vote, and be found by clients
// through the other stores' redirects.
//
// Everything the harness does by address follows the host (addresses.go):
// its status is read at its new admin address, partitions cut the link
// between the hosts' current addresses, a stranger is given the host's
// current file; its disk (slow-disk, lost-writes) and its log stay its
// own. The replaced host gets the first address of 127.0.0.5 and up that
// no host is at, so a host replaced again and again, while the other
// stays, alternates between two addresses.
const ReplaceHost FaultKind = "replace-host"

func init() {
	registerKind(&kindSpec{
		Kind: ReplaceHost, Order: 120, Weight: 2, Target: targetHost,
		Help:    "kill -9 a host's daemon, wipe its data directory and start it empty at another loopback address, from a deployment file edited with umstored plan --deployment FILE --host NAME=ADDRESS (the other host keeps its file)",
		Plan:    holdBetween(1*time.Second, 5*time.Second),
		Prepare: prepareReplacement,
		Inject: func(ctx context.Context, n *nemesis, f Fault, rec *FaultRecord) error {
			return n.replaceHost(ctx, f, rec)
		},
	})
}

// replacement is a replace-host fault prepared: where the host goes and
// the file that says so.
type replacement struct {
	host string
	addr string
	file *deployFile
}

// prepareReplacement picks the host's new address, writes its deployment
// file, and hands that file to every client whose own file would place no
// host where it is once the host has moved.
func prepareReplacement(ctx context.Context, n *nemesis, f Fault, rec *FaultRecord) error {
	now := n.c.hostAddrsNow()
	ports := n.c.hostPorts()
	addr, err := nextAddress(now, f.Host, func(a string) bool { return addrsFree(a, ports) })
	if err != nil {
		return err
	}
	file, err := n.c.readdress(ctx, f.Host, addr)
	if err != nil {
		return err
	}
	n.move = &replacement{host: f.Host, addr: addr, file: file}
	rec.Note = fmt.Sprintf("host %s %s -> %s (%s)", f.Host, now[f.Host], addr, filepath.Base(file.Path))
	after := now
	after[f.Host] = addr
	handed, err := n.handOut(file, after)
	if len(handed) > 0 {
		rec.Note += "; handed the new file first to " + strings.Join(handed, ", ")
	}
	return err
}

// replaceHost is the replacement itself: kill, wipe, move, start.
func (n *nemesis) replaceHost(ctx context.Context, f Fault, rec *FaultRecord) error {
	h, mv, err := n.moveWiped(f)
	if err != nil {
		return err
	}
	_ = sleepCtx(ctx, f.Hold)
	return h.start(fmt.Sprintf("replaced: data directory wiped, at %s with %s", mv.addr, filepath.Base(mv.file.Path)))
}

// moveWiped takes the replacement prepared for f: it kills f.Host's
// daemon, wipes its data directory and moves it to its new address; the
// caller starts it.
func (n *nemesis) moveWiped(f Fault) (*host, *replacement, error) {
	mv := n.move
	n.move = nil
	if mv == nil || mv.host != f.Host {
		return nil, nil, fmt.Errorf("a %s fault was injected without its preparation", f.Kind)
	}
	h := n.c.host(f.Host)
	h.kill9()
	if err := h.wipe(); err != nil {
		return nil, nil, err
	}
	from, err := h.moveTo(mv.addr, mv.file.Path)
	if err != nil {
		return nil, nil, err
	}
	n.log.Info("host replaced", "host", f.Host, "kind", f.Kind, "from", from, "to", mv.addr, "deployment", filepath.Base(mv.file.Path))
	return h, mv, nil
}

// handOut gives file to every running client whose deployment file places
// no host where after says it will be (the product's redirects need one
// store of a client's list to answer): the publishers and durable
// receivers finish cleanly and start again with it, the followers resume
// with it one past what they were handed. It returns who got it.
func (n *nemesis) handOut(file *deployFile, after map[string]string) ([]string, error) {
	stale := func(path string) bool {
		f := n.c.file(path)
		return f == nil || !f.placesAny(after)
	}
	var who []string
	var errs []error
	for _, s := range sortedSources(n.pubs) {
		if p := n.pubs[s]; stale(p.deployment()) {
			who = append(who, "publisher "+s)
			errs = append(errs, p.handOut(file.Path, 45*time.Second))
		}
	}
	for _, s := range sortedSources(n.rcvs) {
		if r := n.rcvs[s]; stale(r.deployment()) {
			who = append(who, "durable receiver "+s)
			errs = append(errs, r.handOut(file.Path, 20*time.Second))
		}
	}
	for _, s := range sortedSources(n.followers) {
		if fl := n.followers[s]; stale(fl.deployment()) {
			who = append(who, "follower "+s)
			fl.handOut(file.Path, file.Groups)
		}
	}
	if len(who) > 0 {
		n.log.Info("handed out the new deployment file", "file", filepath.Base(file.Path), "to", strings.Join(who, ", "))
	}
	return who, errors.Join(errs...)
}
