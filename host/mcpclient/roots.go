package mcpclient

//lint:file-ignore SA1019 roots are deprecated only from protocol 2026-07-28 on; servers of today ask for them (issue 9)

import (
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Roots: a server is told only the roots its config lists, and none by
// default. Some servers (the reference filesystem server among them)
// replace the folders given on their command line with the roots a client
// announces, so a default root (the host's working folder, say) would
// silently change what such a server may touch. With no roots configured
// the roots capability is not even announced.
func rootsFrom(list []string) (rootList, error) {
	var out rootList
	for _, r := range list {
		r = strings.TrimSpace(r)
		if r == "" {
			continue
		}
		if strings.Contains(r, "://") {
			u, err := url.Parse(r)
			if err != nil {
				return nil, fmt.Errorf("root %q is not a valid URI: %w", r, err)
			}
			out = append(out, &mcp.Root{URI: u.String(), Name: path.Base(u.Path)})
			continue
		}
		abs, err := filepath.Abs(r)
		if err != nil {
			return nil, fmt.Errorf("root %q: %w", r, err)
		}
		u := url.URL{Scheme: "file", Path: abs}
		out = append(out, &mcp.Root{URI: u.String(), Name: filepath.Base(abs)})
	}
	return out, nil
}

// rootList is the roots of one server.
type rootList []*mcp.Root

// capabilities announces roots (without listChanged: they never change
// during a session) only when there are some.
func (r rootList) capabilities() *mcp.ClientCapabilities {
	caps := &mcp.ClientCapabilities{}
	if len(r) > 0 {
		caps.RootsV2 = &mcp.RootCapabilities{}
	}
	return caps
}

// add gives the client its roots, which it answers roots/list with.
func (r rootList) add(c *mcp.Client) {
	if len(r) > 0 {
		c.AddRoots(r...)
	}
}
