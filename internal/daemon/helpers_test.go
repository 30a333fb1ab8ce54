package daemon

import "github.com/switchboard-bot/switchboard/memory"

func memoryFilter() memory.AuditFilter { return memory.AuditFilter{Limit: 10} }
