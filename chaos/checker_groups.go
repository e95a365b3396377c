package main

import (
	"fmt"
	"strings"
)

// checkGroupIDs is rule 3: a group keeps one identity for its whole life,
// shared by all its stores, and is bootstrapped once.
func checkGroupIDs(h *History, add addFunc) {
	perStore := map[string]string{}
	perGroup := map[int]string{}
	groupWho := map[int]string{}
	for _, o := range h.GroupIDs {
		if o.GroupID == "" {
			continue // a wiped store reports no identity until it catches up
		}
		if prev, ok := perStore[o.Store]; ok && prev != o.GroupID {
			add("rule3", "store %s (%s) changed its group identity from %s to %s at %s: group %d was bootstrapped over existing state", o.Store, h.hostWhere(o.Host, o.At), prev, o.GroupID, o.At.Format("15:04:05.000"), o.Group)
		}
		perStore[o.Store] = o.GroupID
		if prev, ok := perGroup[o.Group]; ok && prev != o.GroupID {
			add("rule3", "group %d has two identities: %s (store %s) and %s (store %s)", o.Group, prev, groupWho[o.Group], o.GroupID, o.Store)
			continue
		}
		perGroup[o.Group], groupWho[o.Group] = o.GroupID, o.Store
	}
	boots := map[int][]string{}
	idents := map[int][]string{}
	for _, b := range h.Bootstraps {
		where := fmt.Sprintf("%s on host %s (incarnation %d)", b.Store, b.Host, b.Incarnation)
		switch b.Kind {
		case "bootstrap":
			boots[b.Group] = append(boots[b.Group], where)
		case "identity":
			idents[b.Group] = append(idents[b.Group], where+" id "+b.GroupID)
		}
	}
	for _, g := range sortedInts(boots) {
		if len(boots[g]) > 1 {
			add("rule3", "group %d was bootstrapped %d times: %s", g, len(boots[g]), strings.Join(boots[g], "; "))
		}
	}
	for _, g := range sortedInts(idents) {
		if len(idents[g]) > 1 {
			add("rule3", "group %d was given an identity %d times: %s", g, len(idents[g]), strings.Join(idents[g], "; "))
		}
	}
}

// checkCatchUp is rule 4: never two empty stores of one group catching up
// together on one host.
func checkCatchUp(h *History, add addFunc) {
	reported := map[string]bool{}
	for _, o := range h.CatchUps {
		if len(o.Stores) < 2 {
			continue
		}
		key := fmt.Sprintf("%s/%d/%s/%s", o.Host, o.Group, strings.Join(o.Stores, ","), o.Via)
		if reported[key] {
			continue
		}
		reported[key] = true
		add("rule4", "%s: %d empty stores of group %d were catching up together (%s), seen in the %s at %s", h.hostWhere(o.Host, o.At), len(o.Stores), o.Group, strings.Join(o.Stores, ", "), o.Via, o.At.Format("15:04:05.000"))
	}
}
