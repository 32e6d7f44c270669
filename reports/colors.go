package reports

import (
	"image/color"
	"sync"
	"sync/atomic"
)

// Colour assignment within one report. PolicyColor gives every label a fixed
// colour (a shipped policy's own, else one picked by a hash of the label), but
// two hashed labels can pick the same colour and then draw indistinguishable
// lines. While a report is written, its labels are checked for such clashes:
// the later label (in the report's policy order) moves to the next palette
// colour no earlier label of the report uses. Labels that do not clash keep
// their usual colour, so a policy looks the same in every report where it
// meets no clash.
var (
	reportColorsMu sync.Mutex                            // one report's colours at a time
	reportColors   atomic.Pointer[map[string]color.RGBA] // labels moved by distinctColors
)

// distinctColors computes the moved labels of one report: labels in order,
// each keeping PolicyColor's colour unless an earlier label has it.
func distinctColors(labels []string) map[string]color.RGBA {
	used := map[color.RGBA]bool{}
	moved := map[string]color.RGBA{}
	seen := map[string]bool{}
	palette := append(append([]color.RGBA(nil), otherColors...), extraColors...)
	for _, l := range labels {
		if seen[l] {
			continue
		}
		seen[l] = true
		c := basePolicyColor(l)
		if used[c] {
			for _, p := range palette {
				if !used[p] {
					c = p
					moved[l] = p
					break
				}
			}
		}
		used[c] = true
	}
	return moved
}

// withReportColors runs f with the report's clash-free colours in effect.
func withReportColors(labels []string, f func() error) error {
	reportColorsMu.Lock()
	defer reportColorsMu.Unlock()
	m := distinctColors(labels)
	reportColors.Store(&m)
	defer reportColors.Store(nil)
	return f()
}

// extraColors extend the hash palette for clash resolution in large reports.
var extraColors = []color.RGBA{
	{0x33, 0x33, 0x99, 0xFF}, {0x99, 0x66, 0x00, 0xFF}, {0x00, 0x99, 0x99, 0xFF}, {0xCC, 0x33, 0x00, 0xFF},
	{0x66, 0x99, 0x33, 0xFF}, {0x99, 0x33, 0xCC, 0xFF}, {0x33, 0x66, 0x66, 0xFF}, {0xFF, 0x99, 0x33, 0xFF},
}
