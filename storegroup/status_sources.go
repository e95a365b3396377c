package storegroup

import "umstore/repository"

// A store may hold a great many sources (a process with 100,000 sources,
// or a client registering names by the thousand: registering is every
// client's right), and its status listed every one: 20 MB and 0.9 s for
// 20,000 sources, read again by every /v1/status request, `umstored
// status` and the page. It lists at most maxSourcesListed, and says how
// many it holds (Status.SourcesTotal). Those with something to show come
// first: messages held, a gap, a range trimmed or declared never
// published; then the empty ones (registered, never published), each
// part in name order.

// maxSourcesListed bounds the sources one store's status lists.
const maxSourcesListed = 1000

// sourcesToList returns at most n of infos (in name order, as the
// repository lists them), those with something to show first.
func sourcesToList(infos []repository.SourceInfo, n int) []repository.SourceInfo {
	if len(infos) <= n {
		return infos
	}
	shown := func(in repository.SourceInfo) bool {
		return in.Count > 0 || in.HighSeq > 0 || in.TrimmedThrough > 0 || len(in.Unpublished) > 0
	}
	out := make([]repository.SourceInfo, 0, n)
	for _, in := range infos {
		if len(out) < n && shown(in) {
			out = append(out, in)
		}
	}
	for _, in := range infos {
		if len(out) < n && !shown(in) {
			out = append(out, in)
		}
	}
	return out
}
