package placement

// Dev returns the development topology that `umstored dev` runs in one
// process: two hosts, "A" and "B", both at address (normally 127.0.0.1), and
// two groups of three stores in the 2+1 / 1+2 layout:
//
//	host A: G1S1 G1S2 G2S1
//	host B: G1S3 G2S2 G2S3
//
// Ports follow the planner's numbering: raft-port = basePort + 10*group + n
// and client-port = basePort + 1000 + 10*group + n, so basePort 14000 gives
// the ports of the specification's example (G1S1: 14011 and 15011). A
// basePort of 0 means 14000. The deployment is named "dev".
//
// Dev does not check basePort; call [Deployment.Validate] when it comes from
// the user (ports above 65535 are reported there).
func Dev(address string, basePort int) *Deployment {
	if basePort == 0 {
		basePort = DefaultBasePort
	}
	hosts := []Host{{Name: "A", Address: address}, {Name: "B", Address: address}}
	return layout("dev", hosts, 2, 3, basePort)
}
