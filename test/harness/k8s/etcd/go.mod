// Wrapper module that builds the etcd server binary (go.etcd.io/etcd/server/v3 is package main).
// Its own go.mod replaces sibling modules by path, so `go install` cannot build it directly.
module portcullis.dev/test/k8s-tools/etcd

go 1.26.0

require (
	go.etcd.io/etcd/api/v3 v3.6.16
	go.etcd.io/etcd/client/pkg/v3 v3.6.16
	go.etcd.io/etcd/client/v3 v3.6.16
	go.etcd.io/etcd/pkg/v3 v3.6.16
	go.etcd.io/etcd/server/v3 v3.6.16
)
