// Package testports hands tests TCP ports that no other test binary can be
// given at the same time.
//
// go test runs the test binaries of several packages at once, and each of
// them starts stores on ports of its own choosing. A port checked free and
// closed again (the old way) could be checked free by another binary a
// moment later, and the second store to bind it met "address already in
// use". Here each process claims blocks of ports instead: a block is a run
// of blockSize ports with a lock file of its own under os.TempDir(), and a
// process that holds the file's flock owns the block. The lock is held for
// the life of the process and the kernel releases it when the process
// ends, however it ends, so a killed test binary leaves nothing to clean.
//
// The blocks lie above the ports the chaos suite and internal/devstores
// pick (10000-18999) and below the kernel's ephemeral range (read from
// /proc/sys/net/ipv4/ip_local_port_range), where every outgoing connection
// takes a port at random. Ports are handed out from a block in order, each
// still checked bindable, since something outside these tests may hold
// one. No port is given twice in a process: a store closed a moment ago
// may still have connections on its port.
//
// A binary a test starts (umstored run, umstored dev) is given its ports
// on its command line or in its deployment, from the test's blocks.
//
// Product code never uses this package: it takes locks that only tests
// should take.
package testports
