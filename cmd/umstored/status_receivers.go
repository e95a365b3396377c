package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"umstore/deploystatus"
	"umstore/internal/cli"
)

// printReceivers prints every group's named receivers of each source: the
// last message each consumed, its lag behind the source's highest, whether
// it is active (registered, not expired) and paced, and when it was last
// heard from. Names come from the stores: printed through cli.Printable.
func printReceivers(w io.Writer, st deploystatus.Summary) {
	printed := false
	var tw *tabwriter.Writer
	for _, g := range st.Groups {
		for _, src := range g.Sources {
			for _, r := range src.Receivers {
				if !printed {
					tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
					fmt.Fprintf(tw, "GROUP\tSOURCE\tRECEIVER\tCONSUMED\tLAG\tSTATE\tLAST ACTIVITY\n")
					printed = true
				}
				state := "expired"
				if r.Active {
					state = "active"
				}
				if r.Paced {
					state += ", paced"
				}
				last := r.LastActivity
				if last == "" {
					last = "-"
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%s\t%s\n", g.Index, cli.Printable(src.Name), cli.Printable(r.Name), r.Consumed, r.Lag, state, last)
			}
		}
	}
	if printed {
		tw.Flush()
		fmt.Fprintln(w)
	}
}
