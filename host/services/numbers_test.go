package services_test

import (
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/services"
)

// TestHugeNumbersAreRefusedBeforeTheyAreParsed: a number of a million
// digits in a call's params (an integer, a fraction, an exponent, deep in
// an array) gets a clear error naming the bound, without being parsed as a
// big number (which takes seconds of CPU); a number of 64 characters, and
// digits in a string, are no number over the bound. So are exponents past
// three digits.
func TestHugeNumbersAreRefusedBeforeTheyAreParsed(t *testing.T) {
	d, _ := setup(t, services.DispatchOptions{MaxResult: 4 << 20}) // the string of digits comes back
	digits := strings.Repeat("7", 1<<20)
	for name, params := range map[string]string{
		"integer":          `{"filename":"a","count":` + digits + `}`,
		"over the maximum": `{"filename":"a","volume":` + digits + `}`,
		"negative":         `{"filename":"a","volume":-` + digits + `}`,
		"fraction":         `{"filename":"a","volume":0.` + digits + `}`,
		"exponent":         `{"filename":"a","volume":1e` + digits + `}`,
		"in an array":      `{"filename":"a","other":[[` + digits + `]]}`,
	} {
		t.Run(name, func(t *testing.T) {
			out := call(d, "1", "tool", params)
			if out.Success || !strings.Contains(out.Error, "invalid parameters for tool") || !strings.Contains(out.Error, "64 characters") {
				t.Errorf("a number of %d digits: success %v, error %q", len(digits), out.Success, out.Error)
			}
		})
	}
	// A short number with a huge exponent costs as much (10^999999 is
	// computed as a big number): exponents are bounded too.
	if out := call(d, "4", "tool", `{"filename":"a","volume":1e999999}`); out.Success || !strings.Contains(out.Error, "exponent") {
		t.Errorf("an exponent of 999999: success %v, error %q", out.Success, out.Error)
	}
	if out := call(d, "5", "tool", `{"filename":"a","volume":1e-999,"other":12.5E+300}`); !out.Success {
		t.Errorf("exponents of three digits: %s", out.Error)
	}
	long := "1" + strings.Repeat("0", 63)
	if out := call(d, "2", "tool", `{"filename":"a","count":`+long+`}`); !out.Success {
		t.Errorf("a number of 64 characters: %s", out.Error)
	}
	if out := call(d, "3", "tool", `{"filename":"a","tags":["`+digits+`"]}`); !out.Success {
		t.Errorf("digits in a string: %s", out.Error)
	}
}

// TestExponentsPastAFloat64sAreRefused: an exponent of four digits costs
// the validator a 10^9999 each (about 100 µs: a mebibyte of them in an
// array of integers, 17 s of CPU, past the call's deadline; see
// BenchmarkAMebibyteOfExponents), and no float64 needs one: such numbers
// are refused; the exponents of every float64 (three digits) are not.
func TestExponentsPastAFloat64sAreRefused(t *testing.T) {
	d, _ := setup(t, services.DispatchOptions{})
	for _, n := range []string{"1e1000", "1E+9999", "-2.5e-1000", "1e0001000"} {
		if out := call(d, "1", "tool", `{"filename":"a","volume":`+n+`}`); out.Success || !strings.Contains(out.Error, "exponent") {
			t.Errorf("%s: success %v, error %q", n, out.Success, out.Error)
		}
	}
	for _, n := range []string{"1.7976931348623157e308", "4.9e-324", "-0e-999", "1E+999", "5e0000000308"} {
		if out := call(d, "2", "tool", `{"filename":"a","other":`+n+`}`); !out.Success {
			t.Errorf("%s: %s", n, out.Error)
		}
	}
}
