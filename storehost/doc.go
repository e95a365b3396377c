// Package storehost runs the stores of one host of a deployment in one
// process: what `umstored run` does for its host, and `umstored dev` for
// both hosts of its loopback deployment.
//
// [Configs] maps the deployment file to each store's storegroup.Config:
// its group's members and the other groups with their addresses, its data
// directory, the deployment's transport security, the host's address as
// the stores' source address, over one base configuration that every store
// of the host shares. [ApplyPolicy] puts the deployment's policy into that
// base (and [BaseConfig] starts one from storegroup's defaults), once per
// daemon: each key of the policy sets one field of storegroup.Config, and
// the policy's digest is what the members of a group compare. [Start] opens
// every store of the host at once, sharing one admission among them so
// that at most one empty store per group catches up at a time (the staged
// restart of SPEC §4 rule 4), and logs the order placement.RestartPlan
// expects. The stores decide by themselves whether to bootstrap, rejoin or
// refuse (package storegroup); this package only starts, watches and stops
// them.
package storehost
