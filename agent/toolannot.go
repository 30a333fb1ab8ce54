package agent

// ToolAnnotations are hints a tool gives about its side effects. They come
// from the tool's author (for MCP tools: the server's `annotations`,
// readOnlyHint and destructiveHint) and are hints, not guarantees: an
// approval policy may use them to decide which calls need a human's
// confirmation, but must not trust a ReadOnly hint from an untrusted server
// to skip a check it would otherwise make.
type ToolAnnotations struct {
	// ReadOnly reports that the tool does not modify its environment.
	ReadOnly bool
	// Destructive reports that the tool may perform destructive updates
	// (delete, overwrite). Meaningful only when ReadOnly is false.
	Destructive bool
}

// Annotated is implemented by tools that carry ToolAnnotations (every MCP
// tool does). A tool that does not implement it has no annotations: treat it
// as neither read-only nor known to be destructive.
type Annotated interface {
	Annotations() ToolAnnotations
}

// AnnotationsOf returns t's annotations, or the zero value when t does not
// implement Annotated.
func AnnotationsOf(t Tool) ToolAnnotations {
	if a, ok := t.(Annotated); ok {
		return a.Annotations()
	}
	return ToolAnnotations{}
}
