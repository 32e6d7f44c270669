package k8smanifest

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/gpusim/gpusim/sim"
)

// readSchedule applies a schedule CSV with the header name,submit_s,duration_s
// (in any order; submit_s may be left out, meaning 0 unless an annotation
// gives it). name is a workload's name as jobs are named (namespace/name
// outside the default namespace); for a NonIndexed Job with several pods the
// row applies to every pod. Every row must name a workload, once.
func (t *translator) readSchedule(f File) {
	r := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(f.Data, []byte("\xef\xbb\xbf"))))
	r.FieldsPerRecord = -1
	fail := func(line int, col, format string, args ...any) {
		path := ""
		if col != "" {
			path = "column " + col
		}
		t.errs = append(t.errs, &Error{File: f.Name, Line: line, Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	head, err := r.Read()
	if err != nil {
		if err == io.EOF {
			fail(1, "", "empty file: want the header name,submit_s,duration_s")
		} else {
			fail(csvLine(err), "", "%v", csvMsg(err))
		}
		return
	}
	col := map[string]int{}
	for i, h := range head {
		h = strings.ToLower(strings.TrimSpace(h))
		switch h {
		case "name", "submit_s", "duration_s":
		default:
			fail(1, h, "unknown column (want name, submit_s, duration_s)")
			return
		}
		if _, dup := col[h]; dup {
			fail(1, h, "given twice")
			return
		}
		col[h] = i
	}
	for _, need := range []string{"name", "duration_s"} {
		if _, ok := col[need]; !ok {
			fail(1, need, "required")
			return
		}
	}
	seen := map[string]int{}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return
		}
		if err != nil {
			fail(csvLine(err), "", "%v", csvMsg(err))
			return
		}
		line, _ := r.FieldPos(0)
		if len(rec) != len(head) {
			fail(line, "", "want %d fields, got %d", len(head), len(rec))
			continue
		}
		name := strings.TrimSpace(rec[col["name"]])
		drafts := t.bySrc[name]
		if len(drafts) == 0 {
			fail(line, "name", "no workload named %q in the manifests", name)
			continue
		}
		if prev, dup := seen[name]; dup {
			fail(line, "name", "%q is scheduled twice (first at line %d)", name, prev)
			continue
		}
		seen[name] = line
		dur, err := parseTime(rec[col["duration_s"]])
		if err != nil {
			fail(line, "duration_s", "%v", err)
			continue
		}
		var submit sim.Duration
		hasSubmit := false
		if i, ok := col["submit_s"]; ok && strings.TrimSpace(rec[i]) != "" {
			if submit, err = parseTime(rec[i]); err != nil {
				fail(line, "submit_s", "%v", err)
				continue
			}
			hasSubmit = true
		}
		for _, dr := range drafts {
			dr.spec.Duration, dr.hasDuration = dur, true
			if hasSubmit {
				dr.spec.Submit, dr.hasSubmit = sim.Time(submit), true
			}
		}
	}
}

func csvLine(err error) int {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return pe.Line
	}
	return 0
}

func csvMsg(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
