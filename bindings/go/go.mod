// The Go client of rdmad.  See rdmad/doc.go and the README's "Go client".
module github.com/rdmad/rdmad/bindings/go

go 1.19

require google.golang.org/protobuf v1.28.1
