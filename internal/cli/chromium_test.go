package cli

import (
	"bytes"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// chromium returns the headless browser, or skips (fails under CI=true, where
// .ci/run installs it with scripts/ensure-chromium.sh).
func chromium(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium not installed: CI must run scripts/ensure-chromium.sh")
		}
		t.Skip("chromium not installed (scripts/ensure-chromium.sh installs it)")
	}
	return p
}

// The report opened in a real browser at 1,400 px: it has no horizontal
// overflow, every figure renders, the headline table has a row per policy, and a
// screenshot is a real picture (not blank).
func TestReportInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	browser := chromium(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "cmp")
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"compare", "--demo", "--quiet", "-o", out, "--seeds", "2",
		"--set", "workload.synthetic.jobs=300"}, nil, &stdout, &stderr); code != 0 {
		t.Fatalf("compare: exit %d: %s", code, stderr.String())
	}
	page := "file://" + filepath.Join(out, "index.html")
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--disable-dev-shm-usage",
		"--user-data-dir=" + filepath.Join(dir, "profile")}
	dom, err := exec.Command(browser, append(base, "--window-size=1400,1000", "--virtual-time-budget=3000", "--dump-dom", page)...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	attr := func(name string) int {
		m := regexp.MustCompile(name + `="(\d+)"`).FindSubmatch(dom)
		if m == nil {
			t.Fatalf("page has no %s (did the script run?)", name)
		}
		n, _ := strconv.Atoi(string(m[1]))
		return n
	}
	if w := attr("data-scroll-width"); w > 1400 {
		t.Errorf("page is %d px wide at a 1400 px window: horizontal overflow", w)
	}
	figures := len(regexp.MustCompile(`<figure id=`).FindAll(dom, -1))
	if n := attr("data-figures"); n != figures || n < 8 {
		t.Errorf("%d figures rendered as SVG of %d figure elements", n, figures)
	}
	if n := attr("data-headline-rows"); n != 4 {
		t.Errorf("headline table has %d rows, want 4 policies", n)
	}
	shot := filepath.Join(dir, "shot.png")
	if b, err := exec.Command(browser, append(base, "--window-size=1400,2400", "--screenshot="+shot, page)...).CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, b)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1400 || b.Dy() != 2400 {
		t.Errorf("screenshot is %v", b)
	}
	if ink, colors := inkAndColors(img); ink < 0.03 || colors < 20 {
		t.Errorf("screenshot looks blank: %.1f%% non-white pixels, %d colours", 100*ink, colors)
	}
	if dst := os.Getenv("GPUSIM_SCREENSHOT_OUT"); dst != "" {
		b, _ := os.ReadFile(shot)
		os.WriteFile(dst, b, 0o644)
	}
}

// inkAndColors returns the fraction of non-white pixels and the number of
// distinct colours (capped) of img, sampled every 4th pixel.
func inkAndColors(img image.Image) (float64, int) {
	b := img.Bounds()
	seen := map[uint32]bool{}
	ink, n := 0, 0
	for y := b.Min.Y; y < b.Max.Y; y += 4 {
		for x := b.Min.X; x < b.Max.X; x += 4 {
			r, g, bl, _ := img.At(x, y).RGBA()
			n++
			if r < 0xF000 || g < 0xF000 || bl < 0xF000 {
				ink++
			}
			if len(seen) < 1000 {
				seen[(r>>8)<<16|(g>>8)<<8|bl>>8] = true
			}
		}
	}
	return float64(ink) / float64(n), len(seen)
}
