package sdk

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/status"

	pluginv1 "github.com/agenthost/agenthost/proto/plugin/v1"
)

// speaker is this process's way to the host's loudspeaker, ready after the
// host's first Configure.
var speaker = pluginv1.NewSpeaker()

// ErrNoAudio is returned by [Play] when the host takes no sound from this
// plugin (an older host, or one without an output for plugins).
var ErrNoAudio = pluginv1.ErrNoHostAudio

// ErrStopped is what Wait returns for a sound ended by Stop.
var ErrStopped = errors.New("stopped")

// Audio describes a sound to play.
type Audio struct {
	// Name says what plays, for the host's logs and status ("radio: Example FM").
	Name string
	// Class tells the host's mixer what it is: "media" (the default; ducked
	// while the assistant listens and speaks), "announcement" (ducks media),
	// "earcon" or "ring". The host may refuse a class (plugins.audio.classes).
	Class string
	// Rate (Hz) and Channels (1 or 2) of the PCM: signed 16-bit
	// little-endian samples, interleaved.
	Rate, Channels int
	// OnHeld, when set, is called when the host's own policy turns the
	// sound down or holds it, and when it comes back (see Playback.Held),
	// from a goroutine of the Playback: it should return quickly.
	OnHeld func(state string)
}

// Playback is a sound playing; from [Play].
type Playback struct {
	client  pluginv1.HostAudioClient
	id      uint64
	stop    context.CancelFunc
	stopped atomic.Bool // Stop was called
	done    chan struct{}
	frame   int // bytes per frame
	rate    int

	onHeld func(state string)

	mu     sync.Mutex
	sent   int64 // bytes
	paused bool
	held   string
	err    error // why it ended, nil when played out
}

// Play plays the PCM that r gives through the host's speaker, from now
// until r ends (then it plays out), Stop, or ctx ends. It returns once the
// host accepted the stream; a refusal (the host has no output, the plugin
// or class is not allowed, too many streams) is the error, with the host's
// reason. Without a host that takes sound it returns ErrNoAudio.
//
//	pb, err := sdk.Play(ctx, pcm, sdk.Audio{Rate: 48000, Channels: 2})
//	if err != nil { return nil, err }
//	err = pb.Wait()
func Play(ctx context.Context, r io.Reader, a Audio) (*Playback, error) {
	if a.Class == "" {
		a.Class = "media"
	}
	if a.Rate <= 0 || a.Channels <= 0 {
		return nil, fmt.Errorf("play: give the sound's rate and channels (got %d Hz, %d channels)", a.Rate, a.Channels)
	}
	client, err := speaker.Client(ctx)
	if err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(ctx)
	stream, err := client.Play(ctx)
	if err == nil {
		err = stream.Send(&pluginv1.AudioChunk{Header: &pluginv1.AudioHeader{
			Name: a.Name, Class: a.Class, Rate: uint32(a.Rate), Channels: uint32(a.Channels)}})
	}
	var ev *pluginv1.AudioEvent
	if err == nil {
		ev, err = stream.Recv()
	}
	if err == nil && ev.GetStarted() == nil {
		err = errors.New("the host sent no start")
	}
	if err != nil {
		stop()
		return nil, fmt.Errorf("play: %s", hostReason(err))
	}
	p := &Playback{client: client, id: ev.GetStarted().GetStreamId(), stop: stop, done: make(chan struct{}), frame: 2 * a.Channels, rate: a.Rate, onHeld: a.OnHeld}
	sendErr := make(chan error, 1)
	go func() { sendErr <- p.send(stream, r) }()
	go p.receive(stream, sendErr)
	return p, nil
}

// hostReason is err's message for a person: a gRPC status's description.
func hostReason(err error) string {
	if st, ok := status.FromError(err); ok {
		return st.Message()
	}
	return err.Error()
}

// send copies r to the stream in whole frames, then closes its side.
func (p *Playback) send(stream pluginv1.HostAudio_PlayClient, r io.Reader) error {
	buf := make([]byte, pluginv1.MaxAudioChunk/p.frame*p.frame)
	carry := 0 // bytes of a partial frame kept at buf's start
	for {
		n, err := r.Read(buf[carry:])
		n += carry
		whole := n / p.frame * p.frame
		if whole > 0 {
			// A sent message may not be changed afterwards (gRPC's rule): a copy.
			if serr := stream.Send(&pluginv1.AudioChunk{Pcm: bytes.Clone(buf[:whole])}); serr != nil {
				return nil // the host ended it; receive learns why
			}
			p.mu.Lock()
			p.sent += int64(whole)
			p.mu.Unlock()
		}
		carry = copy(buf, buf[whole:n])
		if errors.Is(err, io.EOF) {
			return stream.CloseSend()
		}
		if err != nil {
			p.stop()
			return fmt.Errorf("reading the sound: %w", err)
		}
	}
}

// receive follows the host's events until the stream ends.
func (p *Playback) receive(stream pluginv1.HostAudio_PlayClient, sendErr <-chan error) {
	defer close(p.done)
	var end error
	for {
		ev, err := stream.Recv()
		if err != nil {
			end = errors.New("the host ended the sound: " + hostReason(err))
			break
		}
		if ps := ev.GetPaused(); ps != nil {
			p.mu.Lock()
			p.paused = ps.GetPaused()
			p.mu.Unlock()
		}
		if h := ev.GetHeld(); h != nil {
			state := h.GetState()
			if state == HeldPlaying {
				state = ""
			}
			p.mu.Lock()
			p.held = state
			p.mu.Unlock()
			if p.onHeld != nil {
				p.onHeld(h.GetState())
			}
		}
		if f := ev.GetFinished(); f != nil {
			if !f.GetPlayedOut() {
				end = errors.New(f.GetReason())
			}
			break
		}
	}
	if p.stopped.Load() {
		end = ErrStopped
	}
	p.stop()
	select {
	case err := <-sendErr:
		if err != nil {
			end = err
		}
	default: // still blocked in r.Read; it ends with r
	}
	p.mu.Lock()
	p.err = end
	p.mu.Unlock()
}

// Wait waits until the sound has ended and returns nil when it played out,
// else why it did not (stopped, refused midway, the reader failed).
func (p *Playback) Wait() error {
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Done is closed when the sound has ended.
func (p *Playback) Done() <-chan struct{} { return p.done }

// Stop ends the sound at once; Wait then returns ErrStopped. It returns
// once the host has let the sound go, so that a Play made next (a sound
// that replaces it) is not refused for the place it held
// (plugins.audio.max_streams); from a host too old to say, at once.
func (p *Playback) Stop() {
	p.stopped.Store(true)
	select {
	case <-p.done: // over already
	default:
		ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
		p.client.Stop(ctx, &pluginv1.StopAudioRequest{StreamId: p.id}) // NotFound: it ended meanwhile
		cancel()
	}
	p.stop()
}

// stopTimeout bounds Stop's wait for the host.
const stopTimeout = 5 * time.Second

// Pause holds (true) or resumes (false) the sound at the host.
func (p *Playback) Pause(ctx context.Context, paused bool) error {
	if _, err := p.client.Pause(ctx, &pluginv1.PauseAudioRequest{StreamId: p.id, Paused: paused}); err != nil {
		return fmt.Errorf("pause: %s", hostReason(err))
	}
	p.mu.Lock()
	p.paused = paused
	p.mu.Unlock()
	return nil
}

// Paused reports whether the sound is paused.
func (p *Playback) Paused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused
}

// How the host holds a sound by its own policy (audio.mix): for the
// assistant's turn, an announcement or a ring. Audio.OnHeld is given these.
const (
	HeldDucked  = "ducked"  // turned down; it plays on
	HeldPaused  = "paused"  // held: the reader is not read until it plays again
	HeldPlaying = "playing" // back at its level
)

// Held is how the host holds the sound now by its own policy: "" (it does
// not; also from a host too old to say), HeldDucked or HeldPaused. The
// plugin's own Pause is Paused.
func (p *Playback) Held() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

// Sent is how much sound has been handed to the host so far, as a duration
// (what has played, plus what the host holds in its buffer).
func (p *Playback) Sent() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	frames, rate := p.sent/int64(p.frame), int64(p.rate)
	// Whole seconds first: frames×time.Second overflows after 53 h at 48 kHz.
	return time.Duration(frames/rate)*time.Second + time.Duration(frames%rate)*time.Second/time.Duration(rate)
}
