package pluginv1

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// GRPCPlugin is the go-plugin plugin.GRPCPlugin of this contract. The host
// uses it with Impl nil (see [PluginSet]); a plugin sets Impl.
type GRPCPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	// Impl serves the calls; only the plugin side sets it.
	Impl Server
	// Speaker, on the plugin side, receives the host's HostAudio door.
	Speaker *Speaker
	// HostAudio, on the host side, serves the plugin's sound; nil: none.
	HostAudio HostAudioServer
}

var _ plugin.GRPCPlugin = (*GRPCPlugin)(nil)

// GRPCServer registers Impl on the plugin's gRPC server.
func (p *GRPCPlugin) GRPCServer(broker *plugin.GRPCBroker, s *grpc.Server) error {
	if p.Impl == nil {
		return errors.New("pluginv1: GRPCPlugin.Impl is nil")
	}
	RegisterPluginServiceServer(s, &grpcServer{impl: p.Impl, broker: broker, speaker: p.Speaker})
	return nil
}

// GRPCClient returns the host's [Client] for the connection.
func (p *GRPCPlugin) GRPCClient(_ context.Context, broker *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	cl := &grpcClient{c: NewPluginServiceClient(c)}
	if p.HostAudio != nil {
		cl.audio = &hostAudio{broker: broker, srv: p.HostAudio}
	}
	return cl, nil
}

// NewClient returns a [Client] that talks the contract over conn. Hosts
// normally get one from [Dispense] instead.
func NewClient(conn grpc.ClientConnInterface) Client {
	return &grpcClient{c: NewPluginServiceClient(conn)}
}

// Dispense connects to a started go-plugin client (starting it if needed)
// and returns the contract's [Client].
func Dispense(c *plugin.Client) (Client, error) {
	rpc, err := c.Client()
	if err != nil {
		return nil, err
	}
	raw, err := rpc.Dispense(PluginName)
	if err != nil {
		return nil, err
	}
	cl, ok := raw.(Client)
	if !ok {
		return nil, fmt.Errorf("pluginv1: dispensed %T, not a pluginv1.Client (is ClientConfig.Plugins pluginv1.PluginSet()?)", raw)
	}
	return cl, nil
}

// ---- host side ----

type grpcClient struct {
	c     PluginServiceClient
	audio *hostAudio // nil: this host takes no sound from the plugin
}

func (g *grpcClient) Describe(ctx context.Context) (*Description, error) {
	resp, err := g.c.Describe(ctx, &DescribeRequest{})
	if err != nil {
		return nil, fmt.Errorf("describe: %w", err)
	}
	d := &Description{Name: resp.GetName(), Version: resp.GetVersion(), SDK: resp.GetSdk()}
	for _, s := range resp.GetServices() {
		params := json.RawMessage(s.GetParametersJson())
		if !json.Valid(params) {
			return nil, fmt.Errorf("describe: service %q: parameters are not valid JSON", s.GetName())
		}
		d.Services = append(d.Services, ServiceSpec{
			Name:        s.GetName(),
			Description: s.GetDescription(),
			Parameters:  params,
			Timeout:     time.Duration(s.GetTimeoutMs()) * time.Millisecond,
		})
	}
	return d, nil
}

func (g *grpcClient) Configure(ctx context.Context, config json.RawMessage) error {
	if len(config) == 0 {
		config = json.RawMessage("{}")
	}
	resp, err := g.c.Configure(ctx, &ConfigureRequest{ConfigJson: string(config), HostAudioBrokerId: g.audio.brokerID()})
	if err != nil {
		return fmt.Errorf("configure: %w", err)
	}
	if msg := resp.GetError(); msg != "" {
		return &ConfigError{Message: msg}
	}
	return nil
}

func (g *grpcClient) Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	if len(params) == 0 {
		params = json.RawMessage("{}")
	}
	info := CallInfoFrom(ctx)
	resp, err := g.c.Call(ctx, &CallRequest{Method: method, ParamsJson: string(params), Caller: info.Caller, NetworkAllow: info.NetworkAllow})
	if err != nil {
		return nil, fmt.Errorf("call %s: %w", method, err)
	}
	switch r := resp.GetResult().(type) {
	case *CallResponse_DataJson:
		data := json.RawMessage(r.DataJson)
		if len(data) == 0 {
			data = json.RawMessage("null")
		}
		return data, nil
	case *CallResponse_Error:
		kind := r.Error.GetKind()
		if kind == ErrorKind_ERROR_KIND_UNSPECIFIED {
			kind = ErrorKind_ERROR_KIND_FAILED
		}
		return nil, &CallError{Kind: kind, Message: r.Error.GetMessage()}
	default:
		return nil, fmt.Errorf("call %s: plugin sent a response with neither data nor error", method)
	}
}

func (g *grpcClient) Health(ctx context.Context) error {
	resp, err := g.c.Health(ctx, &HealthRequest{})
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	if !resp.GetHealthy() {
		if resp.GetMessage() == "" {
			return ErrUnhealthy
		}
		return fmt.Errorf("%w: %s", ErrUnhealthy, resp.GetMessage())
	}
	return nil
}

// ---- plugin side ----

type grpcServer struct {
	UnimplementedPluginServiceServer
	impl    Server
	broker  *plugin.GRPCBroker
	speaker *Speaker
}

// recovered turns a panic in impl into a gRPC Internal error, so that a
// broken Server does not take the plugin process down.
func recovered(method string, err *error) {
	if r := recover(); r != nil {
		*err = status.Errorf(codes.Internal, "%s panicked: %v\n%s", method, r, debug.Stack())
	}
}

func (s *grpcServer) Describe(ctx context.Context, _ *DescribeRequest) (resp *DescribeResponse, err error) {
	defer recovered("Describe", &err)
	d, err := s.impl.Describe(ctx)
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	resp = &DescribeResponse{Name: d.Name, Version: d.Version, Sdk: d.SDK}
	for _, svc := range d.Services {
		resp.Services = append(resp.Services, &Service{
			Name:           svc.Name,
			Description:    svc.Description,
			ParametersJson: string(svc.Parameters),
			TimeoutMs:      uint32(svc.Timeout / time.Millisecond),
		})
	}
	return resp, nil
}

func (s *grpcServer) Configure(ctx context.Context, req *ConfigureRequest) (resp *ConfigureResponse, err error) {
	defer recovered("Configure", &err)
	s.speaker.configure(s.broker, req.GetHostAudioBrokerId())
	cfg := json.RawMessage(req.GetConfigJson())
	if len(cfg) == 0 {
		cfg = json.RawMessage("{}")
	}
	if !json.Valid(cfg) {
		return &ConfigureResponse{Error: "config is not valid JSON"}, nil
	}
	if err := s.impl.Configure(ctx, cfg); err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) {
			return &ConfigureResponse{Error: ce.Message}, nil
		}
		return &ConfigureResponse{Error: err.Error()}, nil
	}
	return &ConfigureResponse{}, nil
}

func (s *grpcServer) Call(ctx context.Context, req *CallRequest) (resp *CallResponse, err error) {
	defer func() {
		if r := recover(); r != nil {
			resp = callError(&CallError{
				Kind:    ErrorKind_ERROR_KIND_PANIC,
				Message: fmt.Sprintf("%s failed: internal error in the plugin (panic: %v)", req.GetMethod(), r),
			})
			err = nil
		}
	}()
	params := json.RawMessage(req.GetParamsJson())
	if len(params) == 0 {
		params = json.RawMessage("{}")
	}
	if !json.Valid(params) {
		return callError(NewCallError(ErrorKind_ERROR_KIND_INVALID_PARAMS, "params are not valid JSON")), nil
	}
	ctx = WithCallInfo(ctx, CallInfo{Caller: req.GetCaller(), NetworkAllow: req.GetNetworkAllow()})
	data, err := s.impl.Call(ctx, req.GetMethod(), params)
	if ctx.Err() != nil {
		// The host has given up; say why, the same way every time.
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	if err != nil {
		ce, ok := AsCallError(err)
		if !ok {
			ce = &CallError{Kind: ErrorKind_ERROR_KIND_FAILED, Message: err.Error()}
		}
		return callError(ce), nil
	}
	if len(data) == 0 {
		data = json.RawMessage("null")
	}
	if !json.Valid(data) {
		return callError(NewCallError(ErrorKind_ERROR_KIND_FAILED, "%s failed: the plugin produced invalid JSON", req.GetMethod())), nil
	}
	return &CallResponse{Result: &CallResponse_DataJson{DataJson: string(data)}}, nil
}

func callError(ce *CallError) *CallResponse {
	kind := ce.Kind
	if kind == ErrorKind_ERROR_KIND_UNSPECIFIED {
		kind = ErrorKind_ERROR_KIND_FAILED
	}
	return &CallResponse{Result: &CallResponse_Error{Error: &CallFailure{Kind: kind, Message: ce.Message}}}
}

func (s *grpcServer) Health(ctx context.Context, _ *HealthRequest) (resp *HealthResponse, err error) {
	defer recovered("Health", &err)
	if err := s.impl.Health(ctx); err != nil {
		return &HealthResponse{Healthy: false, Message: err.Error()}, nil
	}
	return &HealthResponse{Healthy: true}, nil
}
