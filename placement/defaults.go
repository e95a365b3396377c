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
// documented default; today those are the stability behaviours (see
// [Stability.WithDefaults]). Keys already set are kept.
//
// [Parse], [Load] and [Plan] call it, so their deployments are complete. A
// deployment built in code should call it before it is used or written, the
// way [Deployment.WriteFile] does for the copy it writes; [Deployment.Validate]
// accepts empty keys and never fills them.
func (d *Deployment) FillDefaults() {
	d.Stability = d.Stability.WithDefaults()
}
