// Package unmute posts "mic on" to the daemon's control socket, as an
// attacker among the daemon's children would.
package unmute

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
)

// Post sends POST /v1/device/mic {"on":true} to the socket at path and
// returns the answer; an error unless the daemon answered 200.
func Post(ctx context.Context, path string) (string, error) {
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}}
	req, err := http.NewRequestWithContext(ctx, "POST", "http://agenthost/v1/device/mic", bytes.NewReader([]byte(`{"on":true}`)))
	if err != nil {
		return "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", resp.Status, body)
	}
	return string(body), nil
}
