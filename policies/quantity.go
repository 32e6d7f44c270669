package policies

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// quantitySuffixes are Kubernetes' binary and decimal quantity suffixes.
var quantitySuffixes = []struct {
	suf string
	m   float64
}{{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40}, {"Pi", 1 << 50},
	{"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}, {"P", 1e15}, {"m", 1e-3}}

// ParseQuantity parses a Kubernetes resource quantity ("16", "500m", "64Gi",
// "1.5", "2e3") into its plain value (64Gi = 68719476736, 500m = 0.5). Negative,
// NaN, infinite and malformed quantities are errors naming the input.
func ParseQuantity(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("empty quantity")
	}
	num, mult := s, 1.0
	for _, x := range quantitySuffixes {
		if strings.HasSuffix(s, x.suf) {
			num, mult = strings.TrimSuffix(s, x.suf), x.m
			break
		}
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("invalid quantity %q", s)
	}
	if v < 0 {
		return 0, fmt.Errorf("quantity %q must be >= 0", s)
	}
	return v * mult, nil
}
