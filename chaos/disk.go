package main

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A host's data lives on a disk of its own: a sparse image file with an
// ext4 filesystem, attached to a loop device and mounted. Its writes can
// then be throttled with a blkio cgroup (cgroup v1), which slows the fsyncs
// of raft's log and the repository for that host only.

// blkioRoot is where the cgroup v1 blkio hierarchy is mounted.
const blkioRoot = "/sys/fs/cgroup/blkio"

// diskTagPrefix starts the name of every mount directory and cgroup the
// harness creates; the rest is its process id, so a later run can tell
// what a dead run left behind.
const diskTagPrefix = "umstore-chaos-disk-"

// disk is one host's throttleable disk.
type disk struct {
	image  string // the image file
	mount  string // where it is mounted
	dev    string // the loop device
	majMin string // "major:minor" of the loop device
	cgroup string // the blkio cgroup the slowed daemon is moved into
	log    *slog.Logger
}

// diskSupport checks that the machine can give hosts slow disks: root,
// loop devices, mkfs.ext4 and the blkio throttle.
func diskSupport() error {
	for _, tool := range []string{"mkfs.ext4", "losetup", "mount", "umount"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("slow disks need %s: %w", tool, err)
		}
	}
	if _, err := os.Stat(filepath.Join(blkioRoot, "blkio.throttle.write_iops_device")); err != nil {
		return fmt.Errorf("slow disks need the cgroup v1 blkio throttle at %s: %w", blkioRoot, err)
	}
	if os.Geteuid() != 0 {
		return errors.New("slow disks need root (loop devices, mounts, cgroups)")
	}
	return nil
}

// newDisk creates, attaches and mounts a disk for host name in dir.
func newDisk(dir, name string, log *slog.Logger) (*disk, error) {
	tag := fmt.Sprintf("%s%d-%s", diskTagPrefix, os.Getpid(), name)
	d := &disk{image: filepath.Join(dir, name+".img"), mount: filepath.Join(dir, tag), log: log}
	f, err := os.Create(d.image)
	if err != nil {
		return nil, fmt.Errorf("create disk image: %w", err)
	}
	err = f.Truncate(1 << 30) // sparse: only what is written takes space
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("size disk image: %w", err)
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", d.image).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("mkfs.ext4 %s: %w: %s", d.image, err, out)
	}
	out, err := exec.Command("losetup", "-f", "--show", d.image).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("losetup %s: %w: %s", d.image, err, out)
	}
	d.dev = strings.TrimSpace(string(out))
	if err := os.MkdirAll(d.mount, 0o755); err != nil {
		d.close()
		return nil, err
	}
	if out, err := exec.Command("mount", d.dev, d.mount).CombinedOutput(); err != nil {
		d.close()
		return nil, fmt.Errorf("mount %s: %w: %s", d.dev, err, out)
	}
	mm, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(d.dev), "dev"))
	if err != nil {
		d.close()
		return nil, fmt.Errorf("device number of %s: %w", d.dev, err)
	}
	d.majMin = strings.TrimSpace(string(mm))
	d.cgroup = filepath.Join(blkioRoot, tag)
	if err := os.Mkdir(d.cgroup, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		d.close()
		return nil, fmt.Errorf("create blkio cgroup: %w", err)
	}
	return d, nil
}

// remount unmounts the disk and mounts it again (after a power cut: the
// filesystem replays its journal).
func (d *disk) remount() error {
	if isMounted(d.mount) {
		if err := unmount(d.mount); err != nil {
			return err
		}
	}
	return d.ensureMounted()
}

// ensureMounted mounts the disk if it is not.
func (d *disk) ensureMounted() error {
	if isMounted(d.mount) {
		return nil
	}
	if out, err := exec.Command("mount", d.dev, d.mount).CombinedOutput(); err != nil {
		return fmt.Errorf("mount %s again: %w: %s", d.dev, err, out)
	}
	return nil
}

// dataDir is the host's data directory on the disk.
func (d *disk) dataDir() string { return filepath.Join(d.mount, "data") }

// slow moves process pid into the disk's cgroup, limited to iops writes
// per second on the disk.
func (d *disk) slow(pid, iops int) error {
	if err := writeCgroup(d.cgroup, "blkio.throttle.write_iops_device", fmt.Sprintf("%s %d", d.majMin, iops)); err != nil {
		return err
	}
	if err := writeCgroup(d.cgroup, "cgroup.procs", strconv.Itoa(pid)); err != nil {
		return err
	}
	d.log.Info("disk slowed", "device", d.dev, "write_iops", iops, "pid", pid)
	return nil
}

// unslow lifts the limit and moves pid back to the harness's own cgroup.
func (d *disk) unslow(pid int) error {
	err := writeCgroup(d.cgroup, "blkio.throttle.write_iops_device", d.majMin+" 0")
	if pid > 0 {
		home, herr := ownBlkioCgroup()
		if herr == nil {
			herr = writeCgroup(home, "cgroup.procs", strconv.Itoa(pid))
		}
		if herr != nil && !errors.Is(herr, syscall.ESRCH) {
			err = errors.Join(err, herr)
		}
	}
	if err == nil {
		d.log.Info("disk speed restored", "device", d.dev, "writes_while_slow", d.writesServiced())
	}
	return err
}

// writesServiced is how many writes the cgroup's processes have issued to
// the disk (shows that the throttle was in the way), -1 if unknown.
func (d *disk) writesServiced() int {
	b, err := os.ReadFile(filepath.Join(d.cgroup, "blkio.throttle.io_serviced"))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == d.majMin && f[1] == "Write" {
			n, _ := strconv.Atoi(f[2])
			return n
		}
	}
	return 0
}

// copyTo copies the disk's contents (data directory and wiped ones) to
// dst, to keep them as evidence once the disk is gone.
func (d *disk) copyTo(dst string) error {
	if out, err := exec.Command("cp", "-a", d.mount, dst).CombinedOutput(); err != nil {
		return fmt.Errorf("copy %s: %w: %s", d.mount, err, out)
	}
	return nil
}

// close unmounts and detaches the disk and removes its image and cgroup.
// The processes using it must have stopped.
func (d *disk) close() error {
	var errs []error
	if d.cgroup != "" {
		_ = writeCgroup(d.cgroup, "blkio.throttle.write_iops_device", d.majMin+" 0")
		errs = append(errs, removeCgroup(d.cgroup))
	}
	if isMounted(d.mount) {
		errs = append(errs, unmount(d.mount))
	}
	if d.dev != "" {
		if out, err := exec.Command("losetup", "-d", d.dev).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("losetup -d %s: %w: %s", d.dev, err, out))
		}
	}
	_ = os.Remove(d.mount)
	errs = append(errs, os.Remove(d.image))
	return errors.Join(errs...)
}

func writeCgroup(dir, file, value string) error {
	if err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0o644); err != nil {
		return fmt.Errorf("write %q to %s: %w", value, filepath.Join(dir, file), err)
	}
	return nil
}

// removeCgroup removes a cgroup once its last process has left it.
func removeCgroup(dir string) error {
	var err error
	for range 50 {
		if err = syscall.Rmdir(dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("remove cgroup %s: %w", dir, err)
}

// ownBlkioCgroup is the blkio cgroup directory of this process.
func ownBlkioCgroup() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && parts[1] == "blkio" {
			return filepath.Join(blkioRoot, parts[2]), nil
		}
	}
	return "", errors.New("this process has no blkio cgroup")
}

// unmount unmounts dir, retrying while it is busy, lazily at last.
func unmount(dir string) error {
	var out []byte
	var err error
	for range 20 {
		if out, err = exec.Command("umount", dir).CombinedOutput(); err == nil {
			return nil
		}
		time.Sleep(250 * time.Millisecond)
	}
	if out2, err2 := exec.Command("umount", "-l", dir).CombinedOutput(); err2 != nil {
		return fmt.Errorf("umount %s: %w: %s; lazy: %v: %s", dir, err, out, err2, out2)
	}
	return nil
}

// mountPoints lists the mount points of the machine.
func mountPoints() []string {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) >= 2 {
			out = append(out, fields[1])
		}
	}
	return out
}

func isMounted(dir string) bool {
	for _, m := range mountPoints() {
		if m == dir {
			return true
		}
	}
	return false
}

// tagPid reads the harness process id from a name made with diskTagPrefix.
func tagPid(name string) (int, bool) {
	rest, ok := strings.CutPrefix(filepath.Base(name), diskTagPrefix)
	if !ok {
		return 0, false
	}
	pidText, _, _ := strings.Cut(rest, "-")
	pid, err := strconv.Atoi(pidText)
	return pid, err == nil
}

// removeStaleDisks unmounts, detaches and removes the disks and cgroups
// of harness processes that died before they could (kill -9). What
// belongs to a live harness, or not to the harness, is never touched.
func removeStaleDisks(log *slog.Logger) {
	for _, m := range mountPoints() {
		pid, ok := tagPid(m)
		if !ok || processAlive(pid) {
			continue
		}
		dev := ""
		if out, err := exec.Command("findmnt", "-n", "-o", "SOURCE", m).Output(); err == nil {
			dev = strings.TrimSpace(string(out))
		}
		if err := unmount(m); err != nil {
			log.Warn("could not unmount a disk left by a dead chaos run", "mount", m, "err", err)
			continue
		}
		if strings.HasPrefix(dev, "/dev/loop") {
			_ = exec.Command("losetup", "-d", dev).Run()
		}
		log.Warn("removed a disk left by a dead chaos run", "mount", m, "device", dev)
	}
	entries, _ := os.ReadDir(blkioRoot)
	for _, e := range entries {
		if pid, ok := tagPid(e.Name()); ok && e.IsDir() && !processAlive(pid) {
			if err := syscall.Rmdir(filepath.Join(blkioRoot, e.Name())); err == nil {
				log.Warn("removed a cgroup left by a dead chaos run", "cgroup", e.Name())
			}
		}
	}
}
