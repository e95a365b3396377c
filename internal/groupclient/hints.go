package groupclient

import (
	"slices"
	"strconv"
	"strings"
	"sync"
)

// processHints holds, for each group (its index and store list), where a
// Client of this process last found the leader. A new Client of the same
// group tries that store first instead of racing through the list: a
// process that starts a thousand sources at once would otherwise open
// several connections per source to find one leader, and the burst alone
// can take a store past its per-address connection limit.
var processHints sync.Map // hintKey -> leader's address

// hintKey names a group by its index and its stores, in any order.
func hintKey(group int, addrs []string) string {
	s := slices.Clone(addrs)
	slices.Sort(s)
	return strconv.Itoa(group) + " " + strings.Join(s, ",")
}

// sharedHint returns where another Client of this process last found the
// group's leader, or "".
func (c *Client) sharedHint() string {
	if h, ok := processHints.Load(hintKey(c.Group, c.Addrs)); ok {
		return h.(string)
	}
	return ""
}

// shareHint records the leader c found (addr) for the Clients of this
// process, or, with addr "", forgets the one c had if it was shared: that
// store no longer leads.
func (c *Client) shareHint(old, addr string) {
	key := hintKey(c.Group, c.Addrs)
	if addr != "" {
		processHints.Store(key, addr)
		return
	}
	if old != "" {
		processHints.CompareAndDelete(key, old)
	}
}
