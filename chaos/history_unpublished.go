package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// logDeclaredUnpublished is the publisher's line when it declares the
// numbers it skipped past its state file's bound never published
// (publisher/unused.go): the stores then report them to receivers as never
// published, not as a gap, and a receiver passes over them without a word.
const logDeclaredUnpublished = "every group has said what it holds: declaring the skipped numbers never published"

// Unpublished is a range a publisher incarnation declared never published,
// from its log.
type Unpublished struct {
	Source      string    `json:"source"`
	Incarnation int       `json:"incarnation"`
	From        uint64    `json:"from"`
	To          uint64    `json:"to"`
	At          time.Time `json:"at"`
}

// AddUnpublished records the ranges one publisher's log declared.
func (h *History) AddUnpublished(u []Unpublished) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.Unpublished = append(h.Unpublished, u...)
}

// unpublishedCovers reports whether every number of from..to of src lies
// in a range a publisher declared never published (h.mu held).
func (h *History) unpublishedCovers(src string, from, to uint64) bool {
	for cur := from; cur <= to; {
		next := cur
		for _, u := range h.Unpublished {
			if u.Source == src && u.From <= cur && cur <= u.To {
				next = u.To + 1
				break
			}
		}
		if next == cur {
			return false
		}
		cur = next
	}
	return true
}

// scanPublisherLogFile reads the declared ranges from the log of source's
// publisher children (every incarnation's).
func scanPublisherLogFile(source, path string) ([]Unpublished, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open publisher %s log: %w", source, err)
	}
	defer f.Close()
	var out []Unpublished
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, logDeclaredUnpublished) {
			continue
		}
		fl := logFields(line)
		if fl["msg"] != logDeclaredUnpublished {
			continue
		}
		from, err1 := strconv.ParseUint(fl["from"], 10, 64)
		to, err2 := strconv.ParseUint(fl["to"], 10, 64)
		if err1 != nil || err2 != nil || to < from {
			continue
		}
		inc, _ := strconv.Atoi(fl["incarnation"])
		at, _ := time.Parse(time.RFC3339Nano, fl["time"])
		out = append(out, Unpublished{Source: source, Incarnation: inc, From: from, To: to, At: at})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read publisher %s log: %w", source, err)
	}
	return out, nil
}
