package pluginv1

// Regenerate plugin.pb.go and plugin_grpc.pb.go after editing plugin.proto:
//
//	go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
//	go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2
//	apt-get install protobuf-compiler   # protoc 3.21.12 was used
//	PATH="$PATH:$(go env GOPATH)/bin" go generate ./proto/plugin/v1
//
// The generated files are committed; building the project does not need protoc.

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative plugin.proto
