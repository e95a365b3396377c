package adminhttp

import (
	"path/filepath"
	"regexp"
	"strings"

	"umstore/storegroup"
)

// The admin server's answers name no file system path: whoever reaches
// the address (or a page that tricked a browser into it) would learn where
// the data lives, which user runs the daemon, and how the machine is laid
// out. A path in a store's error or refusal is replaced by a name: a file
// in a store's data directory by "[data of STORE]/" and its path inside
// the directory, any other path by "[…]/" and its last element. The
// daemon's own log keeps the full paths (storegroup logs every failure and
// refusal when it happens).

// absPath matches an absolute path as it appears in an error: a "/" at
// the start of the text or after a space, quote, bracket, "=" or ":",
// up to the next space, quote, bracket, comma or semicolon. A colon ends
// it too ("open /x/repo.db: permission denied").
var absPath = regexp.MustCompile(`(^|[\s"'(\[=:])(/[^\s"'()\[\],;:]*)`)

// redactor replaces paths by names.
type redactor struct {
	dirs []namedDir // longest first, so a store's directory wins over a parent
}

type namedDir struct{ dir, name string }

// newRedactor names the data directories of stores.
func newRedactor(stores []*storegroup.Store) redactor {
	var r redactor
	for _, s := range stores {
		if dir := s.DataDir(); dir != "" {
			if abs, err := filepath.Abs(dir); err == nil {
				dir = abs
			}
			r.dirs = append(r.dirs, namedDir{filepath.Clean(dir), "[data of " + s.Name() + "]"})
		}
	}
	for i := 1; i < len(r.dirs); i++ {
		for j := i; j > 0 && len(r.dirs[j].dir) > len(r.dirs[j-1].dir); j-- {
			r.dirs[j], r.dirs[j-1] = r.dirs[j-1], r.dirs[j]
		}
	}
	return r
}

// text returns s with every absolute path replaced by a name.
func (r redactor) text(s string) string {
	if !strings.Contains(s, "/") {
		return s
	}
	return absPath.ReplaceAllStringFunc(s, func(m string) string {
		lead, p := "", m
		if m[0] != '/' {
			lead, p = m[:1], m[1:]
		}
		return lead + r.path(p)
	})
}

// path names one absolute path.
func (r redactor) path(p string) string {
	clean := filepath.Clean(p)
	for _, d := range r.dirs {
		if clean == d.dir {
			return d.name
		}
		if rel, ok := strings.CutPrefix(clean, d.dir+"/"); ok {
			return d.name + "/" + rel
		}
	}
	if clean == "/" {
		return "[…]"
	}
	return "[…]/" + filepath.Base(clean)
}

// status returns st with the paths in its free-text fields replaced.
func (r redactor) status(st storegroup.Status) storegroup.Status {
	st.Error = r.text(st.Error)
	st.MoveRefused = r.text(st.MoveRefused)
	st.Placement = r.text(st.Placement)
	st.Repair.LastError = r.text(st.Repair.LastError)
	st.Repair.LastMismatch = r.text(st.Repair.LastMismatch)
	if len(st.PolicyMismatch) > 0 {
		pm := make([]string, len(st.PolicyMismatch))
		for i, m := range st.PolicyMismatch {
			pm[i] = r.text(m)
		}
		st.PolicyMismatch = pm
	}
	return st
}

// statuses redacts every status of sts, in a new slice.
func (r redactor) statuses(sts []storegroup.Status) []storegroup.Status {
	out := make([]storegroup.Status, len(sts))
	for i, st := range sts {
		out[i] = r.status(st)
	}
	return out
}
