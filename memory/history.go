package memory

// SanitizeHistory makes a message list valid for a chat model: an assistant
// tool call whose result does not follow it is removed (the assistant message
// too, if it has nothing else to say), and a tool result that does not answer
// a tool call of the assistant message right before it is removed. The input is
// not modified.
func SanitizeHistory(msgs []Message) []Message {
	out := make([]Message, 0, len(msgs))
	for i := 0; i < len(msgs); {
		m := msgs[i]
		switch {
		case m.Role == RoleTool:
			i++ // orphan: not in the result group of an assistant tool call
		case m.Role == RoleAssistant && len(m.ToolCalls) > 0:
			j := i + 1
			first := map[string]int{}
			for ; j < len(msgs) && msgs[j].Role == RoleTool; j++ {
				if _, dup := first[msgs[j].ToolCallID]; !dup {
					first[msgs[j].ToolCallID] = j
				}
			}
			kept := make([]ToolCall, 0, len(m.ToolCalls))
			keep := map[string]bool{}
			for _, tc := range m.ToolCalls {
				if _, ok := first[tc.ID]; ok && !keep[tc.ID] {
					kept = append(kept, tc)
					keep[tc.ID] = true
				}
			}
			am := m
			am.ToolCalls = kept
			if len(kept) == 0 {
				am.ToolCalls = nil
			}
			if len(kept) > 0 || am.Content != "" {
				out = append(out, am)
			}
			for k := i + 1; k < j; k++ {
				id := msgs[k].ToolCallID
				if keep[id] && first[id] == k {
					out = append(out, msgs[k])
				}
			}
			i = j
		default:
			out = append(out, m)
			i++
		}
	}
	return out
}
