package markup

// Plain renders Markdown as readable plain text: emphasis markers and fences
// removed, links as "text (url)", lists as "• item" / "1. item", quotes with
// "> ", tables as aligned columns, raw HTML kept as the literal text.
func Plain(md string) string { return render(md, dPlain) }
