package traces

import (
	"slices"
	"strings"

	"github.com/gpusim/gpusim/sim"
)

// DAGColumns are the optional native columns (CSV and Parquet, both strings)
// that put a job in a pipeline (docs/dag.md): deps, the "|"-separated IDs of
// the jobs that must complete before it is submitted, and job_name, the stage
// name the duration predictor keys its history on. A job with either gets a
// sim.JobDAG; traces without them parse exactly as before. The readers check
// the dependency graph when the file ends: an unknown ID, a self-dependency or
// a cycle is an error at the line of the offending row (column deps). The
// writers do not write them.
var DAGColumns = []string{"deps", "job_name"}

// dagCols reads the DAG columns of one row into j.DAG.
func dagCols(src fieldSource, j *sim.JobSpec, file string, line int, in interner) error {
	deps, okD := src.str(cDeps)
	name, okN := src.str(cJobName)
	if !okD && !okN {
		return nil
	}
	d := &sim.JobDAG{Name: in.get(strings.TrimSpace(name))}
	for _, id := range strings.Split(deps, "|") {
		if id = strings.TrimSpace(id); id == "" {
			continue
		}
		if sim.JobID(id) == j.ID {
			return rowErr(file, line, colName(cDeps), "job %q depends on itself", id)
		}
		if !slices.Contains(d.Deps, sim.JobID(id)) {
			d.Deps = append(d.Deps, sim.JobID(strings.Clone(id)))
		}
	}
	if len(d.Deps) == 0 && d.Name == "" {
		return nil
	}
	j.DAG = d
	return nil
}

// depCheck collects a trace's rows while it is read (only when the deps
// column is present) and checks the dependency graph at the end.
type depCheck struct {
	file  string
	lines map[sim.JobID]int // row line of every job
	rows  []depRow          // rows with dependencies, in file order
}

type depRow struct {
	id   sim.JobID
	line int
	deps []sim.JobID
}

func newDepCheck(file string) *depCheck {
	return &depCheck{file: file, lines: map[sim.JobID]int{}}
}

func (c *depCheck) add(j *sim.JobSpec, line int) {
	if _, dup := c.lines[j.ID]; !dup {
		c.lines[j.ID] = line
	}
	if j.DAG != nil && len(j.DAG.Deps) > 0 {
		c.rows = append(c.rows, depRow{j.ID, line, j.DAG.Deps})
	}
}

// check returns a *RowError for the first row (in file order) that names an
// unknown job, then for the first row on a dependency cycle.
func (c *depCheck) check() error {
	for _, r := range c.rows {
		for _, d := range r.deps {
			if _, ok := c.lines[d]; !ok {
				return rowErr(c.file, r.line, colName(cDeps), "unknown job %q", d)
			}
		}
	}
	deps := make(map[sim.JobID][]sim.JobID, len(c.rows))
	for _, r := range c.rows {
		deps[r.id] = r.deps
	}
	// Iterative DFS colouring: 1 = on the stack, 2 = done.
	color := make(map[sim.JobID]uint8, len(c.rows))
	type frame struct {
		id sim.JobID
		i  int
	}
	for _, r := range c.rows {
		if color[r.id] != 0 {
			continue
		}
		stack := []frame{{r.id, 0}}
		color[r.id] = 1
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			ds := deps[f.id]
			if f.i == len(ds) {
				color[f.id] = 2
				stack = stack[:len(stack)-1]
				continue
			}
			d := ds[f.i]
			f.i++
			switch color[d] {
			case 0:
				color[d] = 1
				stack = append(stack, frame{d, 0})
			case 1:
				// cycle: d ... top of stack -> d
				k := len(stack) - 1
				for stack[k].id != d {
					k--
				}
				path := make([]string, 0, len(stack)-k+1)
				first := d
				for _, fr := range stack[k:] {
					path = append(path, string(fr.id))
					if c.lines[fr.id] < c.lines[first] {
						first = fr.id
					}
				}
				path = append(path, string(d))
				return rowErr(c.file, c.lines[first], colName(cDeps), "dependency cycle: %s (each waits for the next)", strings.Join(path, " -> "))
			}
		}
	}
	return nil
}
