package reports

import (
	"encoding/csv"
	"io"
)

func newCSVReader(r io.Reader) *csv.Reader {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	cr.FieldsPerRecord = len(JobColumns)
	return cr
}
