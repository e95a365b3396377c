// Package placement decides where the stores of an umstore deployment run,
// and reads and writes the deployment file that records that decision.
//
// A deployment is a set of hosts and a set of store groups. Every group is
// one Raft cluster with an odd number (at least three) of stores, and a
// publisher sends every message to every group. The point of laying stores
// out carefully is that losing one host must leave at least one group with a
// quorum, so that publishing goes on. The headline case is two hosts and two
// groups of three stores laid out 2+1 / 1+2:
//
//	host A              host B
//	  G1S1  G1S2          G1S3
//	  G2S1                G2S2  G2S3
//
// Losing host A costs group 1 its quorum but group 2 keeps one on host B, and
// the other way round.
//
// Apart from reading and writing the deployment file, the package holds only
// pure logic; it opens no sockets and knows nothing of Raft. The intergroup
// rule it applies after a host loss is package quorum's
// ([quorum.Behavior.Met]), so the rule has one statement. It offers:
//
//   - the deployment file: [Load] and [Parse] (which fill in the defaults
//     with [Deployment.FillDefaults] and then validate), [Deployment.Validate]
//     (a pure check), [Deployment.Marshal] and [Deployment.WriteFile]; strict
//     about unknown keys and precise about where a problem is (file, line and
//     key path), and refusing a file larger than [MaxFileSize] unread;
//   - [Dev], the two-host, two-group loopback topology used by `umstored dev`;
//   - [Plan], the planner, which lays out stores over hosts and refuses unsafe
//     requests with a [Refusal] that explains why;
//   - [Analyze], the failure analysis: for each host that could be lost, which
//     groups keep a quorum and whether publishing goes on under each
//     intergroup stability behaviour; [RenderLayout] draws the layout;
//   - [RestartPlan], the staged restart of one host's stores: stores that kept
//     their state first, then empty stores, never more than one empty store
//     per group catching up at a time, so that no group ever has a quorum of
//     empty stores.
//
// The planner's and the restart plans' scenarios are text files under the
// repository's top-level testdata/planner and testdata/restart, run by
// planner_scenario_test.go and restart_scenario_test.go.
package placement
