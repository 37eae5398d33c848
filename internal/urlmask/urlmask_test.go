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

// TestInTextKeepsNoSecretOfAURL: every URL in a name loses its query and
// fragment, and its password is masked; the rest of the name stays.
func TestInTextKeepsNoSecretOfAURL(t *testing.T) {
	for in, want := range map[string]string{
		"plugin:media/Example FM":                          "plugin:media/Example FM",
		"plugin:media/https://user:pw@r.example/a.mp3?k=v": "plugin:media/https://user:%2A%2A%2A%2A@r.example/a.mp3",
		"plugin:x/a http://h/p?t=1 and ftp://h/q#x":        "plugin:x/a http://h/p and ftp://h/q",
		"plugin:x/line\nbreak":                             "plugin:x/linebreak",
		"http://[::1":                                      Mask,
	} {
		if got := InText(in); got != want {
			t.Errorf("InText(%q) = %q, want %q", in, got, want)
		}
	}
}
