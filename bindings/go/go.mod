// The Go client of rdmad, rdmad-cdi and rdmad-device-plugin.  See
// rdmad/doc.go and the README's "Go client".  The meson build compiles this
// tree in GOPATH mode against Debian's Go packages (go.sh); these are the
// versions Debian 12 has, for builds with modules.
module github.com/rdmad/rdmad/bindings/go

go 1.19

require (
	github.com/container-orchestrated-devices/container-device-interface v0.5.2
	github.com/fsnotify/fsnotify v1.6.0
	golang.org/x/sys v0.3.0
	google.golang.org/grpc v1.33.3
	google.golang.org/protobuf v1.28.1
)
