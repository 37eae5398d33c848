package wakeword

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// verifierJSON is a valid verifier file's content.
func verifierJSON(t testing.TB) []byte {
	v := Verifier{Version: VerifierVersion, Model: "hey_jarvis", Window: 16, Candidate: 0.1, Threshold: 0.9,
		Weights: make([]float32, 16*embedSize), Bias: -1}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzParseVerifier: whatever a verifier file holds, reading it returns a
// verifier that passes its checks (and whose probability of any window is
// a number in [0, 1]) or an error; never a panic.
func FuzzParseVerifier(f *testing.F) {
	f.Add(verifierJSON(f))
	f.Add([]byte(`{"version": 1, "model": "m", "window": 1, "candidate": 0.1, "threshold": 0.5, "weights": [1e38, -1e38, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], "bias": 1e300}`))
	f.Add([]byte(`{"version": 1, "window": 100000000}`))
	f.Add([]byte(`{"version": 2}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{} {}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := ParseVerifier(b)
		if err != nil {
			if v != nil {
				t.Fatal("a verifier and an error")
			}
			return
		}
		if err := v.Check(); err != nil {
			t.Fatalf("accepted a verifier that fails its checks: %v", err)
		}
		w := make([]float32, v.Window*embedSize)
		for i := range w {
			w[i] = float32(i%5) - 2
		}
		if p := v.Prob(w); !(p >= 0 && p <= 1) {
			t.Fatalf("probability %v", p)
		}
	})
}

// TestABrokenVerifierFileIsAClearError: a file that is missing is no
// verifier and no error; one that is not a verifier, of another version,
// the wrong size or not numbers is an error that names the file and why.
func TestABrokenVerifierFileIsAClearError(t *testing.T) {
	dir := t.TempDir()
	if v, err := LoadVerifier(filepath.Join(dir, "none.verifier.json")); v != nil || err != nil {
		t.Fatalf("missing file: %v, %v", v, err)
	}
	good := verifierJSON(t)
	for _, c := range []struct{ content, want string }{
		{string(good), ""},
		{"", "not a verifier file"},
		{"\x00garbage", "not a verifier file"},
		{strings.Replace(string(good), `"version":1`, `"version":7`, 1), "format version 7"},
		{strings.Replace(string(good), `"window":16`, `"window":8`, 1), "needs 768"},
		{strings.Replace(string(good), `"threshold":0.9`, `"threshold":1.5`, 1), "threshold 1.5"},
		{strings.Replace(string(good), `"bias":-1`, `"bias":"x"`, 1), "not a verifier file"},
		{string(good) + "{}", "data after the document"},
		{`{"version":1,"model":"m","window":1,"candidate":0.1,"threshold":0.5,"weights":[` + strings.Repeat("0,", 95) + `1e39]}`, "not a verifier file"},
		{strings.Repeat(" ", MaxVerifierSize+1), "larger than"},
	} {
		p := filepath.Join(dir, "hey_jarvis.verifier.json")
		if err := os.WriteFile(p, []byte(c.content), 0o600); err != nil {
			t.Fatal(err)
		}
		v, err := LoadVerifier(p)
		switch {
		case c.want == "" && (err != nil || v == nil):
			t.Errorf("a good file: %v", err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p)):
			t.Errorf("%.40q: error %v, want one naming the file and %q", c.content, err, c.want)
		}
	}
	if p := (&Verifier{Weights: []float32{1}, Bias: math.Inf(1)}).Prob([]float32{1}); p != 1 {
		t.Errorf("probability %v", p)
	}
}
