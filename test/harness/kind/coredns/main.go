// CoreDNS for the e2e tier's kind node: the plugins kubeadm's default Corefile names and no
// others, so the build stays small. "forward" is replaced by nullforward, which answers SERVFAIL
// without sending anything: the test cluster resolves only its own Services and must never query
// a resolver outside the machine.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
	_ "github.com/coredns/coredns/plugin/root"

	_ "portcullis.dev/test/kind/coredns/nullforward"
)

func init() {
	// The order plugins run in; kubeadm's Corefile uses these and only these.
	dnsserver.Directives = []string{
		"root", "bind", "ready", "health", "prometheus", "errors", "log", "loadbalance",
		"cache", "reload", "loop", "kubernetes", "forward",
	}
}

func main() { coremain.Run() }
