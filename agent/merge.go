package agent

import (
	"fmt"
	"sort"

	openai "github.com/sashabaranov/go-openai"

	"github.com/switchboard-bot/switchboard/memory"
)

// toolCallMerger assembles streamed tool-call deltas. OpenAI sends a call's
// id, type and name in its first fragment and the arguments in pieces, each
// tagged with the call's index; go-openai hands the fragments over unmerged.
// Deviations seen in OpenAI-compatible servers are tolerated: fragments
// without an index (continuing the last call, or starting a new one when they
// carry a new id) and several complete calls sent under the same index with
// different ids.
type toolCallMerger struct {
	calls []mergedCall
	byIdx map[int]int // stream index → position in calls
	next  int         // synthetic index for fragments without one
}

type mergedCall struct {
	idx  int
	id   string
	name string
	args []byte
}

func (m *toolCallMerger) add(tc openai.ToolCall) {
	if m.byIdx == nil {
		m.byIdx = map[int]int{}
	}
	var pos int
	var ok bool
	switch {
	case tc.Index != nil:
		pos, ok = m.byIdx[*tc.Index]
		if ok && tc.ID != "" && m.calls[pos].id != "" && tc.ID != m.calls[pos].id {
			ok = false // a different call reusing the index
		}
		if !ok {
			idx := *tc.Index
			if _, taken := m.byIdx[idx]; taken {
				idx = m.maxIdx() + 1
			}
			pos = m.start(idx)
			m.byIdx[*tc.Index] = pos
		}
	case len(m.calls) == 0 || (tc.ID != "" && tc.ID != m.calls[len(m.calls)-1].id):
		pos = m.start(m.maxIdx() + 1)
	default:
		pos = len(m.calls) - 1
	}
	c := &m.calls[pos]
	if c.id == "" {
		c.id = tc.ID
	}
	switch n := tc.Function.Name; {
	case n == "" || n == c.name:
	case c.name == "":
		c.name = n
	default:
		c.name += n
	}
	c.args = append(c.args, tc.Function.Arguments...)
}

func (m *toolCallMerger) start(idx int) int {
	m.calls = append(m.calls, mergedCall{idx: idx})
	if idx >= m.next {
		m.next = idx + 1
	}
	return len(m.calls) - 1
}

func (m *toolCallMerger) maxIdx() int { return m.next - 1 }

// result returns the calls ordered by index; missing ids are filled in.
func (m *toolCallMerger) result() []memory.ToolCall {
	if len(m.calls) == 0 {
		return nil
	}
	sorted := append([]mergedCall(nil), m.calls...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].idx < sorted[j].idx })
	out := make([]memory.ToolCall, 0, len(sorted))
	for _, c := range sorted {
		id := c.id
		if id == "" {
			id = fmt.Sprintf("call_%d", c.idx)
		}
		out = append(out, memory.ToolCall{ID: id, Name: c.name, Arguments: string(c.args)})
	}
	return out
}
