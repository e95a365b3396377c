package placement

import (
	"fmt"
	"strings"
)

// columnGap is the space between two host columns of RenderLayout.
const columnGap = 6

// RenderLayout draws which stores run on which host: one column per host, in
// the deployment's host order, and one row per group, in index order.
//
//	host A (127.0.0.2)      host B (127.0.0.3)
//	  G1S1  G1S2              G1S3
//	  G2S1                    G2S2  G2S3
//
// Lines carry no trailing spaces and the text ends with a newline.
func RenderLayout(d *Deployment) string {
	groups := d.sortedGroups()
	// cells[row][col]; row 0 is the header.
	cells := make([][]string, len(groups)+1)
	cells[0] = make([]string, len(d.Hosts))
	for c, h := range d.Hosts {
		cells[0][c] = fmt.Sprintf("host %s (%s)", h.Name, h.Address)
	}
	for r, g := range groups {
		row := make([]string, len(d.Hosts))
		for c, h := range d.Hosts {
			var names []string
			for _, s := range g.Stores {
				if s.Host == h.Name {
					names = append(names, s.Name)
				}
			}
			if len(names) > 0 {
				row[c] = "  " + strings.Join(names, "  ")
			}
		}
		cells[r+1] = row
	}
	widths := make([]int, len(d.Hosts))
	for _, row := range cells {
		for c, cell := range row {
			widths[c] = max(widths[c], len(cell))
		}
	}
	var b strings.Builder
	for _, row := range cells {
		var line strings.Builder
		for c, cell := range row {
			line.WriteString(cell)
			if c < len(row)-1 {
				line.WriteString(strings.Repeat(" ", widths[c]-len(cell)+columnGap))
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteString("\n")
	}
	return b.String()
}
