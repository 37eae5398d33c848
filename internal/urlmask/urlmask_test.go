package urlmask

import (
	"strings"
	"testing"
)

// TestStringMasksEverySecretPart: the password (or a user name alone), each
// query value and the fragment are masked; the scheme, host, path and
// query keys stay.
func TestStringMasksEverySecretPart(t *testing.T) {
	for raw, want := range map[string]string{
		"https://bob:pa55word@mcp.example:8443/mcp?api_key=s3cr3t&x=tok%2Fen#fr4g": "https://bob:%2A%2A%2A%2A@mcp.example:8443/mcp?api_key=****&x=****#****",
		"https://t0kenuser@mcp.example/mcp":                                        "https://%2A%2A%2A%2A@mcp.example/mcp",
		"http://127.0.0.1:9000/mcp?bare-token":                                     "http://127.0.0.1:9000/mcp?****",
		"http://127.0.0.1:9000/mcp#%2Fsecret":                                      "http://127.0.0.1:9000/mcp#****",
		"http://127.0.0.1:9000/mcp":                                                "http://127.0.0.1:9000/mcp",
		"":                                                                         "",
		"http://[::1":                                                              Mask,
	} {
		if got := String(raw); got != want {
			t.Errorf("String(%q) = %q, want %q", raw, got, want)
		}
	}
}

// TestSecretsNamesWhatStringMasks: in each form a URL is quoted.
func TestSecretsNamesWhatStringMasks(t *testing.T) {
	got := strings.Join(Secrets("https://bob:pa55word@mcp.example/mcp?api_key=s3cr3t&x=tok%2Fen&y=ab#fr%2Fag"), " ")
	for _, want := range []string{"pa55word", "s3cr3t", "tok%2Fen", "tok/en", "fr/ag", "fr%2Fag"} {
		if !strings.Contains(got, want) {
			t.Errorf("Secrets lacks %q: %s", want, got)
		}
	}
	if strings.Contains(got, "bob") || strings.Contains(got, " ab") {
		t.Errorf("Secrets names a user name beside a password, or a 2-character value: %s", got)
	}
}
