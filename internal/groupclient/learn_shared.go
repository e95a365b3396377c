package groupclient

import (
	"slices"
	"sync"
	"time"
)

// processLearned holds, per group (hintKey), what the Clients of this
// process last learnt of where the group's moved stores listen, and when
// one of them asked.
var processLearned sync.Map // hintKey -> *sharedLearning

// sharedLearning is one group's Learn answers, shared by the Clients of a
// process.
type sharedLearning struct {
	mu      sync.Mutex
	asked   time.Time // when a Client last set out to ask
	learned []string
}

func (c *Client) processLearning() *sharedLearning {
	v, _ := processLearned.LoadOrStore(hintKey(c.Group, c.Addrs), &sharedLearning{})
	return v.(*sharedLearning)
}

// claim reports whether the caller should ask the group now (fresh: no
// Client of the process asked within learnEvery; the caller is recorded as
// asking), and otherwise returns what was learnt.
func (s *sharedLearning) claim() (learned []string, fresh bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if time.Since(s.asked) < learnEvery {
		return slices.Clone(s.learned), false
	}
	s.asked = time.Now()
	return nil, true
}

// keep records what a Client learnt, for the others.
func (s *sharedLearning) keep(learned []string) {
	s.mu.Lock()
	s.learned = slices.Clone(learned)
	s.mu.Unlock()
}
