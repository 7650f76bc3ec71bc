// Command etcd is the etcd server, built here (instead of from the
// go.etcd.io/etcd/v3 root module) so its version is the one
// k8s.io/kubernetes was released against.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
