package reports

import (
	"bytes"
	"image/color"
	"strings"
	"testing"
)

// TestModelsTable: the report's Models table shows the failure figures of a
// failure run (failResult: 1 interruption, 120 GPU-s lost = 0.0 GPU-h at one
// decimal, goodput 440/560), "–" for a plain run beside it, and is absent when
// no run has an optional model.
func TestModelsTable(t *testing.T) {
	fail := Summarize(failResult(t), Provenance{}, 0)
	plain := Summarize(smallResult(t), Provenance{}, 0)
	rep := &Report{Runs: []*Run{{Summary: fail}, {Summary: plain}}, Labels: []string{"ft", "plain"}}
	head, rows := rep.ModelsTable()
	want := []string{"run", "failures: interruptions", "failures: lost GPU-h", "failures: goodput"}
	if strings.Join(head, "|") != strings.Join(want, "|") {
		t.Fatalf("header %q, want %q", head, want)
	}
	if got := strings.Join(rows[0], "|"); got != "ft|1|0.0|0.786" {
		t.Errorf("failure run row %q", got)
	}
	if got := strings.Join(rows[1], "|"); got != "plain|–|–|–" {
		t.Errorf("plain run row %q", got)
	}
	var b bytes.Buffer
	if err := rep.writeHTML(&b, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `<table id="models">`) || !strings.Contains(b.String(), "<td class=\"num\">0.786</td>") {
		t.Error("the HTML report lacks the Models table")
	}
	only := &Report{Runs: []*Run{{Summary: plain}}, Labels: []string{"plain"}}
	if h, _ := only.ModelsTable(); h != nil {
		t.Errorf("plain runs only: header %q, want none", h)
	}
	b.Reset()
	if err := only.writeHTML(&b, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "<h2>Models</h2>") {
		t.Error("a report of plain runs has a Models section")
	}
}

// TestDistinctColors: "plain" and "avoid-degraded" hash to the same colour;
// within one report the later label moves to a free colour, the first keeps
// its own, and a shipped policy keeps its fixed colour.
func TestDistinctColors(t *testing.T) {
	if basePolicyColor("plain") != basePolicyColor("avoid-degraded") {
		t.Skip("the two labels no longer clash; pick another pair")
	}
	m := distinctColors([]string{"fifo", "avoid-degraded", "plain"})
	if _, ok := m["avoid-degraded"]; ok {
		t.Error("the first label of a clash moved")
	}
	c, ok := m["plain"]
	if !ok || c == basePolicyColor("avoid-degraded") || c == basePolicyColor("fifo") {
		t.Errorf("plain: %v, %v", c, ok)
	}
	var during, after [2]color.RGBA
	_ = withReportColors([]string{"avoid-degraded", "plain"}, func() error {
		during = [2]color.RGBA{PolicyColor("avoid-degraded"), PolicyColor("plain")}
		return nil
	})
	after = [2]color.RGBA{PolicyColor("avoid-degraded"), PolicyColor("plain")}
	if during[0] == during[1] {
		t.Error("two policies of one report share a colour")
	}
	if after[0] != after[1] {
		t.Error("outside a report the hashed colours changed")
	}
}
