package placement

// WithDefaults returns s with each empty behaviour replaced by its
// documented default: intragroup "quorum", intergroup "any".
func (s Stability) WithDefaults() Stability {
	if s.Intragroup == "" {
		s.Intragroup = IntragroupQuorum
	}
	if s.Intergroup == "" {
		s.Intergroup = IntergroupAny
	}
	return s
}

// FillDefaults sets every key the deployment file may leave out to its
// documented default: the stability behaviours (see
// [Stability.WithDefaults]) and, for a deployment built in code whose
// policy is wholly unset, the policy ([DefaultPolicy]; a file's policy keys
// get their defaults as it is read). Keys already set are kept. A group's
// preferred host is left as it is: left out, it stands for the host holding
// the group's majority ([Group.Preferred]), which the planner writes out.
//
// [Parse], [Load] and [Plan] call it, so their deployments are complete. A
// deployment built in code should call it before it is used or written, the
// way [Deployment.WriteFile] does for the copy it writes; [Deployment.Validate]
// accepts empty keys and never fills them.
func (d *Deployment) FillDefaults() {
	d.Stability = d.Stability.WithDefaults()
	if d.Policy == (Policy{}) {
		d.Policy = DefaultPolicy()
	}
}
