package mcpclient

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

// TestScrubHidesTheURLsSecretsInEveryForm: an error may show the server's
// URL as configured, as net/http prints it (password replaced, query
// kept) or escaped; none of them may carry the password or a query token
// into a log line (found by review: net/http's form went through whole).
func TestScrubHidesTheURLsSecretsInEveryForm(t *testing.T) {
	raw := "https://bob:pa55word@mcp.example:8443/mcp?api_key=s3cr3t-t0ken&x=tok/en+1"
	u, _ := url.Parse(raw)
	for name, e := range map[string]error{
		"as configured": errors.New("connect " + raw + ": refused"),
		"net/http":      &url.Error{Op: "Post", URL: u.Redacted(), Err: errors.New("connection refused")},
		"no user":       errors.New(`Post "https://mcp.example:8443/mcp?api_key=s3cr3t-t0ken": EOF`),
		"escaped":       errors.New("GET " + u.String()),
	} {
		got := scrubURL(e, raw).Error()
		for _, secret := range []string{"pa55word", "s3cr3t-t0ken", "tok/en+1", url.QueryEscape("tok/en+1")} {
			if strings.Contains(got, secret) {
				t.Errorf("%s: %q shows %q", name, got, secret)
			}
		}
		if !strings.Contains(got, "mcp.example:8443") {
			t.Errorf("%s: %q no longer says which server", name, got)
		}
	}
	if scrubURL(nil, raw) != nil {
		t.Error("a nil error became an error")
	}
}

// TestSameOrigin: scheme, host and port, a default port written or not.
func TestSameOrigin(t *testing.T) {
	base, _ := url.Parse("https://MCP.example/mcp?token=x")
	for raw, want := range map[string]bool{
		"https://mcp.example/other":    true,
		"https://mcp.example:443/mcp":  true,
		"HTTPS://mcp.EXAMPLE/mcp":      true,
		"http://mcp.example/mcp":       false,
		"https://mcp.example:8443/mcp": false,
		"https://evil.example/mcp":     false,
		"https://mcp.example.evil/mcp": false,
		"https://sub.mcp.example/mcp":  false,
		"https://mcp.example@evil/mcp": false,
		"http://mcp.example:443/mcp":   false,
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := sameOrigin(u, base); got != want {
			t.Errorf("sameOrigin(%s, %s) = %v, want %v", raw, base, got, want)
		}
	}
}
