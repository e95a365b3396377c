package storehost

import (
	"log/slog"
	"path/filepath"
	"strings"

	"umstore/placement"
	"umstore/storegroup"
)

// logRestartPlan explains, when some of the host's stores are empty, the
// order in which they will start (SPEC §4 rule 4). The stores enforce the
// order themselves (admission, vote gate); this tells the operator what to
// expect. A wholly new deployment is bootstrapped, not restarted.
func logRestartPlan(d *placement.Deployment, host, dataDir string, log *slog.Logger) {
	hasState := map[string]bool{}
	empty := 0
	for _, ref := range d.StoresOn(host) {
		hasState[ref.Store.Name] = storegroup.DataDirHasState(filepath.Join(dataDir, ref.Store.Name))
		if !hasState[ref.Store.Name] {
			empty++
		}
	}
	if empty == 0 {
		return
	}
	if empty == len(hasState) {
		log.Info("every store of this host is empty: a new host, or one that lost its disk; new groups are bootstrapped once every store of the deployment answers, existing ones are rejoined one empty store per group at a time")
	}
	plan, err := placement.RestartPlan(d, host, hasState)
	if err != nil {
		log.Info("restart plan: assuming the other hosts' stores hold state would still leave a group without one; if the deployment is new this is expected", "detail", err.Error())
		return
	}
	for _, line := range strings.Split(strings.TrimSpace(plan.Render()), "\n") {
		log.Info("restart plan: " + line)
	}
}
