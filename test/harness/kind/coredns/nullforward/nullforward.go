// Package nullforward registers a "forward" plugin that accepts the Corefile's forward block and
// answers every query that reaches it with SERVFAIL, sending no packet anywhere.
package nullforward

import (
	"context"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	"github.com/miekg/dns"
)

func init() { plugin.Register("forward", setup) }

func setup(c *caddy.Controller) error {
	// Skip "forward . /etc/resolv.conf { ... }": its arguments and block mean nothing here.
	for c.Next() {
		c.RemainingArgs()
		for c.NextBlock() {
			c.RemainingArgs()
		}
	}
	dnsserver.GetConfig(c).AddPlugin(func(plugin.Handler) plugin.Handler { return refuse{} })
	return nil
}

type refuse struct{}

func (refuse) Name() string { return "forward" }

func (refuse) ServeDNS(context.Context, dns.ResponseWriter, *dns.Msg) (int, error) {
	return dns.RcodeServerFailure, nil
}
