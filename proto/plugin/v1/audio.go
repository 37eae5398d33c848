package pluginv1

import (
	"context"
	"errors"
	"sync"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// Sound from plugins (HostAudio in plugin.proto): the host serves HostAudio
// on a GRPCBroker id it names in ConfigureRequest.host_audio_broker_id; the
// plugin dials that id once and plays through it.

// MaxAudioChunk is the largest PCM payload of one AudioChunk, in bytes.
const MaxAudioChunk = 64 << 10

// AudioClasses are the classes a stream may name, as the mixer knows them.
var AudioClasses = []string{"ring", "voice", "earcon", "announcement", "media"}

// ErrNoHostAudio is returned by [Speaker.Client] when the host takes no
// audio from plugins (an older host, one without an output, or a plugin
// not started by a host).
var ErrNoHostAudio = errors.New("the host takes no audio from this plugin (an older host, or none configured)")

// PluginSetWithAudio is [PluginSet] for a host that takes sound from the
// plugin: srv serves that plugin's HostAudio calls.
func PluginSetWithAudio(srv HostAudioServer) plugin.PluginSet {
	return plugin.PluginSet{PluginName: &GRPCPlugin{HostAudio: srv}}
}

// hostAudio is the host side of one plugin process's HostAudio door.
type hostAudio struct {
	broker *plugin.GRPCBroker
	srv    HostAudioServer
	once   sync.Once
	id     uint32
}

// brokerID opens the door on the first Configure and returns its id. The
// server ends when the broker closes (the plugin's client is killed).
func (h *hostAudio) brokerID() uint32 {
	if h == nil {
		return 0
	}
	h.once.Do(func() {
		h.id = h.broker.NextId()
		go h.broker.AcceptAndServe(h.id, func(opts []grpc.ServerOption) *grpc.Server {
			// A plugin's streams and messages are bounded like its sound.
			s := grpc.NewServer(append(opts, grpc.MaxConcurrentStreams(16), grpc.MaxRecvMsgSize(MaxAudioChunk+4096))...)
			RegisterHostAudioServer(s, h.srv)
			return s
		})
	})
	return h.id
}

// Speaker is the plugin's side of HostAudio: ready once the host's first
// Configure said where (or that there is none).
type Speaker struct {
	mu         sync.Mutex
	configured bool
	ready      chan struct{} // closed when client or err is set
	client     HostAudioClient
	conn       *grpc.ClientConn
	err        error
}

// NewSpeaker returns a Speaker to put in [GRPCPlugin.Speaker].
func NewSpeaker() *Speaker { return &Speaker{ready: make(chan struct{})} }

// configure is called with each ConfigureRequest's broker id; the first
// one dials it (go-plugin holds the host's connection info only briefly, so
// this does not wait for the first Play).
func (s *Speaker) configure(broker *plugin.GRPCBroker, id uint32) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.configured {
		return
	}
	s.configured = true
	if id == 0 || broker == nil {
		s.err = ErrNoHostAudio
		close(s.ready)
		return
	}
	go func() {
		conn, err := broker.Dial(id)
		s.mu.Lock()
		defer s.mu.Unlock()
		if err != nil {
			s.err = errors.Join(ErrNoHostAudio, err)
		} else {
			s.conn, s.client = conn, NewHostAudioClient(conn)
		}
		close(s.ready)
	}()
}

// Client returns the HostAudio client, waiting (within ctx) while the
// connection is being made.
func (s *Speaker) Client(ctx context.Context) (HostAudioClient, error) {
	if s == nil {
		return nil, ErrNoHostAudio
	}
	s.mu.Lock()
	configured := s.configured
	s.mu.Unlock()
	if !configured {
		return nil, ErrNoHostAudio
	}
	select {
	case <-s.ready:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.client, s.err
}
