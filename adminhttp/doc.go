// Package adminhttp is the admin HTTP server of a daemon that runs stores
// (`umstored run --admin-addr`, `umstored dev`): health and readiness for
// supervisors, the stores' own status in full, Prometheus metrics,
// profiling, and the status page, a live picture of the whole deployment
// drawn in the browser from /v1/deployment.
//
// /v1/deployment is a deploystatus.View: the daemon's own stores from
// their status, every other store of the deployment from a shared, cached
// round of probes, so that however many browsers poll, the other hosts'
// stores are asked at most once a second.
package adminhttp
