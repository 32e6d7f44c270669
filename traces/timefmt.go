package traces

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

var dateLayouts = []string{
	"2006-01-02 15:04:05",
	"2006-01-02T15:04:05",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
	time.RFC3339Nano,
	"2006-01-02 15:04:05Z07:00",
	"2006/01/02 15:04:05",
	"2006-01-02 15:04",
	"2006-01-02T15:04",
}

// parseDate parses a wall-clock timestamp and returns seconds since the Unix epoch.
// Timestamps without a zone are read as UTC (only differences matter). ok is false
// for the empty string and for the placeholders schedulers print ("Unknown",
// "None", "null", "NaN", "N/A").
func parseDate(s string) (sec float64, ok bool, err error) {
	s = strings.TrimSpace(s)
	switch strings.ToLower(s) {
	case "", "unknown", "none", "null", "nan", "n/a":
		return 0, false, nil
	}
	for _, l := range dateLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return float64(t.Unix()) + float64(t.Nanosecond())/1e9, true, nil
		}
	}
	return 0, true, fmt.Errorf("bad timestamp %q (want YYYY-MM-DD HH:MM:SS)", s)
}

// dateCol parses an optional timestamp column; a bad value is a skip.
func dateCol(in *csvIn, col string) (float64, bool, error) {
	v, ok, err := parseDate(in.get(in.col(col)))
	if err != nil {
		return 0, true, &skipError{Column: col, Reason: "bad timestamp", Detail: err.Error()}
	}
	return v, ok, nil
}

// minDateCSV scans the whole CSV file once and returns the earliest valid timestamp
// of column col (the time origin of importers whose times are dates). found is
// false when no row has one.
func minDateCSV(path string, comma rune, col string) (min float64, found bool, err error) {
	in, err := openCSV(path, comma)
	if err != nil {
		return 0, false, err
	}
	defer in.close()
	in.lenient = true
	idx := in.col(col)
	if idx < 0 {
		return 0, false, nil
	}
	for {
		err := in.next()
		if errors.Is(err, io.EOF) {
			return min, found, nil
		}
		if err != nil {
			if _, ok := err.(*skipError); ok {
				continue
			}
			return 0, false, err
		}
		v, ok, err := parseDate(in.get(idx))
		if err != nil || !ok {
			continue
		}
		if !found || v < min {
			min, found = v, true
		}
	}
}
