package main

import (
	"errors"
	"fmt"
	"net"
)

// plannedPorts lists the raft and client ports `umstored plan` gives two
// groups of three stores from base.
func plannedPorts(base int) []int {
	var ports []int
	for g := 1; g <= 2; g++ {
		for s := 1; s <= 3; s++ {
			ports = append(ports, base+10*g+s, base+1000+10*g+s)
		}
	}
	return ports
}

// storePorts lists the deployment's raft and client ports.
func (c *cluster) storePorts() []int { return c.ports }

// portsFree reports whether every port the planner gives base, and the
// admin port, is free on both host addresses.
func portsFree(base int) bool {
	ports := append(plannedPorts(base), base+2000)
	for _, h := range hostAddrs {
		for _, p := range ports {
			ln, err := net.Listen("tcp", net.JoinHostPort(h.addr, fmt.Sprint(p)))
			if err != nil {
				return false
			}
			ln.Close()
		}
	}
	return true
}

// Base ports are picked below the kernel's ephemeral range (32768 and up),
// so an outgoing connection never holds a port a restarting store needs.
const (
	basePortMin = 10000
	basePortMax = 18900
)

// freeBasePort finds a free base port, starting from a point derived from
// start so consecutive schedules use different ports.
func freeBasePort(start int) (int, error) {
	n := (basePortMax - basePortMin) / 100
	for i := 0; i < n; i++ {
		base := basePortMin + ((start+i)%n)*100
		if portsFree(base) {
			return base, nil
		}
	}
	return 0, errors.New("no free range of ports on 127.0.0.2 and 127.0.0.3")
}
