package doctor

import (
	"context"

	"github.com/switchboard-bot/switchboard/channels/platform"
)

// netCheck is one check that may call out; Run runs them concurrently.
type netCheck struct {
	name string
	run  func(context.Context) Result
}

// platformChecks are the doctor checks the enabled platforms' descriptors
// bring (platform.Descriptor.Doctor), named as the descriptor names them.
func (d *doctor) platformChecks() []netCheck {
	var out []netCheck
	deps := platform.Deps{HTTPClient: d.opts.HTTPClient, Logger: d.log, Timeout: d.opts.Timeout}
	for _, p := range d.cfg.Platforms().All() {
		sec := d.cfg.Channels[p.Name]
		if sec == nil || !sec.IsEnabled() {
			continue
		}
		for _, c := range p.Doctor {
			out = append(out, netCheck{c.Name, func(ctx context.Context) Result {
				r := c.Run(ctx, sec, deps)
				return Result{Name: c.Name, Status: Status(r.Status), Finding: r.Finding, Fix: r.Fix}
			}})
		}
	}
	return out
}
