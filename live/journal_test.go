package live

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestJournalTornTailAndErrors(t *testing.T) {
	dir := t.TempDir()
	j, err := OpenJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []Record{{Rec: RecHeader, Version: 1, Policy: "fifo"}, {Rec: RecLaunch, Job: "a", GPUs: []int{0}}} {
		if err := j.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	path := filepath.Join(dir, JournalFile)
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("journal mode %v, want 0600", st.Mode().Perm())
	}
	// A crash in the middle of a write leaves a line without its newline.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"rec":"start","job":"a","pi`)
	f.Close()
	j, err = OpenJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(j.Records()); n != 2 || j.Records()[1].Job != "a" {
		t.Fatalf("records after a torn tail: %+v", j.Records())
	}
	if err := j.Append(Record{Rec: RecEnd, Job: "a", Outcome: "completed"}); err != nil {
		t.Fatal(err)
	}
	j.Close()
	b, _ := os.ReadFile(path)
	if strings.Contains(string(b), `"pi`) || strings.Count(string(b), "\n") != 3 {
		t.Fatalf("torn tail not truncated before appending:\n%s", b)
	}
	// Any other malformed line is an error naming the file and line.
	os.WriteFile(path, append(b, []byte("{\"rec\":\"end\",\"bogus\":1}\n")...), 0o600)
	if _, err := OpenJournal(dir); err == nil || !strings.Contains(err.Error(), JournalFile+":4: ") || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("unknown field: %v", err)
	}
	os.WriteFile(path, append(b, []byte("{\"t_us\":1}\n")...), 0o600)
	if _, err := OpenJournal(dir); err == nil || !strings.Contains(err.Error(), JournalFile+":4: rec: missing record kind") {
		t.Fatalf("missing rec: %v", err)
	}
}
