package sim

import (
	"fmt"
	"strings"
)

// FieldError is a validation problem at a field path of a configuration document
// (e.g. "workload.synthetic.arrival.rate"). Loaders that know the document's source
// positions turn the path into a file:line.
type FieldError struct {
	Path string
	Msg  string
}

func (e FieldError) Error() string { return e.Path + ": " + e.Msg }

// FieldErrors collects every problem found (validation never stops at the first).
type FieldErrors []FieldError

// Add appends a problem at path.
func (fe *FieldErrors) Add(path, format string, args ...any) {
	*fe = append(*fe, FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// Prefix returns the errors with prefix+"." prepended to every path.
func (fe FieldErrors) Prefix(prefix string) FieldErrors {
	out := make(FieldErrors, len(fe))
	for i, e := range fe {
		p := prefix
		if e.Path != "" {
			if strings.HasPrefix(e.Path, "[") {
				p += e.Path
			} else {
				p += "." + e.Path
			}
		}
		out[i] = FieldError{Path: p, Msg: e.Msg}
	}
	return out
}

// Err returns nil when empty, else the list as an error.
func (fe FieldErrors) Err() error {
	if len(fe) == 0 {
		return nil
	}
	return fe
}

func (fe FieldErrors) Error() string {
	parts := make([]string, len(fe))
	for i, e := range fe {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "\n")
}
