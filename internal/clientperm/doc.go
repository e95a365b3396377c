// Package clientperm is the deployment's client identities and what each
// may do: publish sources, receive sources, use durable receiver names,
// each granted on name patterns (pattern.go). The stores' client server
// names a connection's identity at its Hello, from the token it presents
// or its TLS certificate's name, and checks every request against it
// (docs/security.md, "Client identities"). The package is pure: no
// files, no network; the caller reads the token files.
package clientperm
