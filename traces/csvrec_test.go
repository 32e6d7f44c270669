package traces

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func readAllRec(data string) ([][]string, []int, error) {
	r := newRecReader(bufio.NewReaderSize(strings.NewReader(data), 16), ',')
	var out [][]string
	var lines []int
	for {
		rec, err := r.read()
		if err == io.EOF {
			return out, lines, nil
		}
		if err != nil {
			return out, lines, err
		}
		out = append(out, append([]string(nil), rec...))
		lines = append(lines, r.recLine)
	}
}

func readAllStd(data string) ([][]string, []int, error) {
	r := csv.NewReader(strings.NewReader(data))
	r.FieldsPerRecord = -1
	var out [][]string
	var lines []int
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return out, lines, nil
		}
		if err != nil {
			return out, lines, err
		}
		l, _ := r.FieldPos(0)
		out = append(out, rec)
		lines = append(lines, l)
	}
}

func TestRecReader(t *testing.T) {
	for _, in := range []string{
		"a,b,c\n1,2,3\n",
		"a,b\r\n\r\n\"x,y\",\"he said \"\"hi\"\"\"\r\n",
		"a,\"multi\nline\",c\nd,e,f",
		"a,b,\n,,\n",
		"\"\",\"\"\n",
		"only\n\n\nlast",
		strings.Repeat("x", 100) + "," + strings.Repeat("y", 50) + "\n",
	} {
		got, gl, gerr := readAllRec(in)
		want, wl, werr := readAllStd(in)
		if (gerr != nil) != (werr != nil) || !cmp.Equal(got, want) || !cmp.Equal(gl, wl) {
			t.Errorf("%q:\n got %q %v %v\nwant %q %v %v", in, got, gl, gerr, want, wl, werr)
		}
	}
	for _, bad := range []string{"a,\"b\n", "a,b\"c\n", "\"a\"b,c\n"} {
		if _, _, err := readAllRec(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// FuzzRecReader checks the fast CSV reader against encoding/csv: same records and
// record lines whenever encoding/csv accepts the input.
func FuzzRecReader(f *testing.F) {
	f.Add("a,b\n\"c\"\"d\",e\r\n")
	f.Add("a,\"x\ny\",z\n\n1,2,3")
	f.Fuzz(func(t *testing.T, in string) {
		if strings.ContainsRune(in, '\r') || bytes.ContainsRune([]byte(in), 0xFFFD) {
			return // encoding/csv rewrites lone and quoted CRs; not compared
		}
		want, wl, werr := readAllStd(in)
		if werr != nil {
			return
		}
		got, gl, gerr := readAllRec(in)
		if gerr != nil || !cmp.Equal(got, want) || !cmp.Equal(gl, wl) {
			t.Fatalf("%q:\n got %q %v %v\nwant %q %v", in, got, gl, gerr, want, wl)
		}
	})
}
