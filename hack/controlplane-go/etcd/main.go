// Command etcd is etcd's own server entry point, built from the etcd release that
// k8s.io/kubernetes pins, so the local control plane needs no downloaded binary.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
