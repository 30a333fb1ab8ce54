package doctor

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/switchboard-bot/switchboard/internal/daemon"
	"github.com/switchboard-bot/switchboard/internal/sandbox"
)

// CheckExec runs `true` in the sandbox of the exec section, as the exec
// tool would (reported only when agent.tools enables exec). ok: commands
// can run; fail: what to install or change (exec is refused until then);
// warn: exec.sandbox is none, commands run unsandboxed.
const CheckExec = "exec sandbox"

func (d *doctor) checkExec(ctx context.Context) Result {
	res := Result{Name: CheckExec}
	o := daemon.ExecSandboxOptions(d.cfg)
	o.Bwrap = d.opts.Bwrap
	o.Logger = d.log
	r, err := sandbox.New(o)
	if err != nil {
		res.Status, res.Finding, res.Fix = StatusFail, oneLine(err.Error()), "fix the exec section of the config"
		return res
	}
	if err := r.Check(ctx); err != nil {
		res.Status = StatusFail
		var ue *sandbox.UnavailableError
		if errors.As(err, &ue) {
			res.Finding, res.Fix = "exec is refused: "+ue.Reason, ue.Fix
		} else {
			res.Finding, res.Fix = "exec is refused: "+oneLine(err.Error()), "see the message; run `switchboard doctor` again after fixing it"
		}
		return res
	}
	if r.Mode() == sandbox.ModeNone {
		res.Status = StatusWarn
		res.Finding = "exec.sandbox is none: commands run UNSANDBOXED as the daemon's user, with its files, network and environment"
		res.Fix = "install bubblewrap (apt-get install bubblewrap) and set exec.sandbox: bwrap"
		return res
	}
	net := "no network"
	if o.Network {
		net = "network on (exec.network)"
	}
	res.Status = StatusOK
	res.Finding = fmt.Sprintf("bubblewrap runs commands (%s, timeout %s, work in %s)", net, r.Timeout(), tempDirName(o.TempDir))
	return res
}

// execEnabled reports whether agent.tools offers exec.
func (d *doctor) execEnabled() bool { return slices.Contains(d.cfg.Agent.Tools, "exec") }

func tempDirName(dir string) string {
	if dir == "" {
		return "the system's temporary directory"
	}
	return dir
}
