package link

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/agenthost/agenthost/proto/voice"
)

// Probe connects once, authenticates, and watches the connection for
// AuthTimeout: the answer for `agenthost check`. It returns what the server
// said (its STATUS lines), or why the connection or AUTH failed.
func Probe(ctx context.Context, o Options) ([]string, error) {
	l := New(o, nil)
	s := l.set.Load()
	nc, err := l.dial(ctx, s)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	token, err := s.token()
	if err != nil {
		return nil, fmt.Errorf("reading the token: %w", err)
	}
	if token == "" {
		return nil, errors.New("no token configured: set server.token, server.token_file or AGENTHOST_SERVER_TOKEN")
	}
	auth, err := voice.Auth{Token: token, Params: s.params}.Marshal()
	if err != nil {
		return nil, err
	}
	enc := voice.NewEncoder(nc)
	if err := enc.Encode(voice.Frame{Type: voice.TypeAuth, Task: voice.SystemTask, Payload: auth}); err != nil {
		return nil, fmt.Errorf("sending AUTH: %w", err)
	}
	nc.SetReadDeadline(time.Now().Add(s.authTimeout))
	dec := voice.NewDecoder(nc, voice.WithMaxFrame(s.maxFrame))
	var said []string
	for {
		f, err := dec.Decode()
		if err != nil {
			if voice.IsFrameError(err) {
				said = append(said, "(malformed frame: "+err.Error()+")")
				continue
			}
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return said, fmt.Errorf("authentication failed: the server closed the connection right after AUTH; check the token and the AUTH parameters")
			}
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() {
				return said, fmt.Errorf("the connection failed right after AUTH: %w", err)
			}
			break // the deadline: nothing went wrong within AuthTimeout
		}
		if f.Type == voice.TypeStatus {
			said = append(said, string(f.Payload))
			if voice.ClassifyStatus(f.Payload) == voice.StatusKindError {
				return said, fmt.Errorf("authentication failed: the server answered %q; check the token and the AUTH parameters", f.Payload)
			}
		}
	}
	nc.SetDeadline(time.Now().Add(time.Second))
	enc.Encode(voice.StatusFrame(voice.StatusDisconnect))
	return said, nil
}
