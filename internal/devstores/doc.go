// Package devstores runs a whole deployment's stores inside the calling
// process, in a temporary directory on loopback: the two-host, two-group
// topology of `umstored dev`, for the SDKs' runnable examples and for
// programs that have no testing.TB (internal/clustertest needs one).
//
//	stores, err := devstores.Start(ctx)
//	if err != nil { ... }
//	defer stores.Stop()
//	cfg.Groups = stores.Groups()
//
// It is not for production: ports are picked at random on 127.0.0.1 and
// the data goes when Stop returns.
package devstores
