package pluginv1

import "google.golang.org/grpc"

// window is the flow-control window of a host's connection to a plugin, of
// each call and of the whole connection, both ways: gRPC's default size,
// but static. A dynamic window (gRPC's default) estimates the
// bandwidth-delay product with a PING after each DATA frame that arrives
// while none is out, so every call carried two PINGs and their two acks
// beside its own frames (wake-ups of both processes' readers and writers),
// and on a unix socket the estimate never grew the window past its start
// for a call's few hundred bytes. A larger result only waits for window
// updates every 64 KiB, a round trip of microseconds here.
const window = 64 << 10

// DialOptions are the gRPC options a host dials a plugin with
// (go-plugin's ClientConfig.GRPCDialOptions).
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithInitialWindowSize(window), grpc.WithInitialConnWindowSize(window)}
}

// ServerOptions are the gRPC options a plugin serves with (plugins/sdk
// adds them to go-plugin's).
func ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.InitialWindowSize(window), grpc.InitialConnWindowSize(window)}
}
