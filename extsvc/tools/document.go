package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"regexp"
	"strings"
	"unicode"

	"github.com/taskflow/taskflow/extsvc"
)

// MaxDocumentBytes bounds document.process's input.
const MaxDocumentBytes = 10 << 20

type documentParams struct {
	Content string `json:"content"`
	// Format is text, html or markdown; empty guesses from the content.
	Format string `json:"format"`
}

var (
	reDropBlocks = regexp.MustCompile(`(?is)<(script|style|head|noscript)\b.*?</(script|style|head|noscript)\s*>`)
	reComment    = regexp.MustCompile(`(?s)<!--.*?-->`)
	reBlockTag   = regexp.MustCompile(`(?i)</?(p|div|br|li|ul|ol|h[1-6]|tr|table|section|article|header|footer|blockquote|pre)\b[^>]*>`)
	reTag        = regexp.MustCompile(`(?s)<[^>]*>`)
	reMdImage    = regexp.MustCompile(`!\[([^\]]*)\]\([^)]*\)`)
	reMdLink     = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	reMdHeading  = regexp.MustCompile(`(?m)^\s{0,3}#{1,6}\s+`)
	reMdQuote    = regexp.MustCompile(`(?m)^\s{0,3}>\s?`)
	reMdList     = regexp.MustCompile(`(?m)^\s*([-*+]|\d+\.)\s+`)
	reMdFence    = regexp.MustCompile("(?m)^```.*$")
	reMdEmph     = regexp.MustCompile("(\\*\\*|__|\\*|_|`)")
	reBlankRuns  = regexp.MustCompile(`\n{3,}`)
)

// ExtractText returns the plain text of content in format (text, html or
// markdown).
func ExtractText(content, format string) string {
	var s string
	switch format {
	case "html":
		s = reDropBlocks.ReplaceAllString(content, "")
		s = reComment.ReplaceAllString(s, "")
		s = reBlockTag.ReplaceAllString(s, "\n")
		s = reTag.ReplaceAllString(s, "")
		s = html.UnescapeString(s)
	case "markdown":
		s = reMdFence.ReplaceAllString(content, "")
		s = reMdImage.ReplaceAllString(s, "$1")
		s = reMdLink.ReplaceAllString(s, "$1")
		s = reMdHeading.ReplaceAllString(s, "")
		s = reMdQuote.ReplaceAllString(s, "")
		s = reMdList.ReplaceAllString(s, "")
		s = reMdEmph.ReplaceAllString(s, "")
	default:
		s = content
	}
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.FieldsFunc(l, unicode.IsSpace), " ")
	}
	s = reBlankRuns.ReplaceAllString(strings.Join(lines, "\n"), "\n\n")
	return strings.TrimSpace(s) + "\n"
}

func guessFormat(content string) string {
	t := strings.TrimSpace(content)
	lower := strings.ToLower(t)
	switch {
	case strings.HasPrefix(lower, "<!doctype html") || strings.HasPrefix(lower, "<html") || reTag.MatchString(t) && strings.Contains(lower, "</"):
		return "html"
	case reMdHeading.MatchString(t) || reMdLink.MatchString(t) || strings.Contains(t, "```"):
		return "markdown"
	}
	return "text"
}

type documentHandler struct{ o Options }

func (h documentHandler) Handle(ctx context.Context, t *extsvc.Task) (json.RawMessage, error) {
	var p documentParams
	if err := t.UnmarshalParams(&p); err != nil {
		return nil, err
	}
	if strings.TrimSpace(p.Content) == "" {
		return nil, invalid("content: required (the document's text, HTML or Markdown)")
	}
	if len(p.Content) > MaxDocumentBytes {
		return nil, invalid("content: %d bytes exceeds %d", len(p.Content), MaxDocumentBytes)
	}
	format := strings.ToLower(p.Format)
	switch format {
	case "":
		format = guessFormat(p.Content)
	case "md":
		format = "markdown"
	case "txt":
		format = "text"
	case "text", "html", "markdown":
	default:
		return nil, invalid("format %q: want text, html or markdown", p.Format)
	}
	text := ExtractText(p.Content, format)
	words := len(strings.Fields(text))
	url, _, sum, err := writeOutput(ctx, h.o, t, "txt", []byte(text))
	if err != nil {
		return nil, err
	}
	preview := text
	if r := []rune(preview); len(r) > 200 {
		preview = string(r[:200]) + "…"
	}
	return extsvc.Result(url, fmt.Sprintf("extracted %d words from %s", words, format), map[string]any{
		"format": format, "words": words, "characters": len([]rune(text)), "lines": strings.Count(text, "\n"),
		"preview": strings.TrimSpace(preview), "sha256": sum,
	}), nil
}
