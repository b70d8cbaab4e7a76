package summarize

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// sentence is one unit the extractive summarizer may pick.
type sentence struct {
	text  string
	index int  // position in the document
	para  int  // paragraph number
	lead  bool // first sentence of its paragraph
}

// maxSentenceRunes splits run-on "sentences" (text without punctuation) so
// that one of them cannot swallow the whole document.
const maxSentenceRunes = 600

// abbreviations end with a period without ending a sentence (lower case,
// without the final period).
var abbreviations = map[string]bool{
	"mr": true, "mrs": true, "ms": true, "dr": true, "prof": true, "sr": true, "jr": true, "st": true,
	"vs": true, "etc": true, "e.g": true, "i.e": true, "cf": true, "al": true, "approx": true,
	"no": true, "fig": true, "vol": true, "inc": true, "ltd": true, "co": true, "corp": true,
	"jan": true, "feb": true, "mar": true, "apr": true, "jun": true, "jul": true, "aug": true,
	"sep": true, "sept": true, "oct": true, "nov": true, "dec": true, "u.s": true, "u.k": true,
	"p": true, "pp": true, "ca": true, "mt": true, "gen": true, "gov": true, "dept": true,
	"z.b": true, "usw": true, "bzw": true, "ggf": true, "d.h": true, "m": true, "mme": true,
}

// splitSentences cuts text into paragraphs (blank lines, or lines that
// start a list item) and paragraphs into sentences.
func splitSentences(text string) []sentence {
	var out []sentence
	para := 0
	for _, p := range splitParagraphs(text) {
		first := true
		for _, s := range splitParagraph(p) {
			out = append(out, sentence{text: s, index: len(out), para: para, lead: first})
			first = false
		}
		if !first {
			para++
		}
	}
	return out
}

func splitParagraphs(text string) []string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	var paras []string
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			paras = append(paras, strings.Join(cur, " "))
			cur = cur[:0]
		}
	}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "":
			flush()
		case isListItem(line) || isHeading(line):
			flush()
			cur = append(cur, line)
			if isHeading(line) {
				flush()
			}
		default:
			cur = append(cur, line)
		}
	}
	flush()
	return paras
}

func isListItem(line string) bool {
	if strings.HasPrefix(line, "- ") || strings.HasPrefix(line, "* ") || strings.HasPrefix(line, "• ") {
		return true
	}
	i := 0
	for i < len(line) && i < 4 && line[i] >= '0' && line[i] <= '9' {
		i++
	}
	return i > 0 && i+1 < len(line) && (line[i] == '.' || line[i] == ')') && line[i+1] == ' '
}

// isHeading spots markdown headings: they stand alone.
func isHeading(line string) bool { return strings.HasPrefix(line, "#") }

// splitParagraph cuts one paragraph at sentence ends: . ! ? … followed by
// space (after optional closing quotes/brackets), and CJK 。！？ anywhere.
func splitParagraph(p string) []string {
	var out []string
	start := 0
	emit := func(end int) {
		s := strings.TrimSpace(p[start:end])
		start = end
		if s == "" {
			return
		}
		out = append(out, splitLong(s)...)
	}
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRuneInString(p[i:])
		next := i + size
		switch r {
		case '。', '！', '？', '｡':
			j := skipClosers(p, next)
			emit(j)
			i = j
			continue
		case '.', '!', '?', '…':
			// Take the whole run of terminators ("?!", "...").
			for next < len(p) && strings.ContainsRune(".!?…", rune(p[next])) {
				next++
			}
			j := skipClosers(p, next)
			if j < len(p) && !isSpace(p, j) {
				break // "3.14", "example.com", "a.b"
			}
			if r == '.' && next == i+1 && (isAbbreviation(p[start:i]) || isListNumber(p[start:i])) {
				break
			}
			emit(j)
			i = j
			continue
		}
		i = next
	}
	emit(len(p))
	return out
}

func skipClosers(p string, j int) int {
	for j < len(p) {
		r, size := utf8.DecodeRuneInString(p[j:])
		if !strings.ContainsRune("\"')]}»”’」』）", r) {
			break
		}
		j += size
	}
	return j
}

func isSpace(p string, j int) bool {
	r, _ := utf8.DecodeRuneInString(p[j:])
	return unicode.IsSpace(r)
}

// isAbbreviation reports whether the word before a period (the end of
// before) is a known abbreviation or a single letter (an initial).
func isAbbreviation(before string) bool {
	k := len(before)
	for k > 0 {
		r, size := utf8.DecodeLastRuneInString(before[:k])
		if unicode.IsSpace(r) || r == '(' || r == '"' {
			break
		}
		k -= size
	}
	word := strings.ToLower(before[k:])
	if utf8.RuneCountInString(word) == 1 {
		r, _ := utf8.DecodeRuneInString(word)
		return unicode.IsLetter(r)
	}
	return abbreviations[word]
}

// isListNumber reports whether a sentence so far is only a number ("1" of
// "1. Install the pump").
func isListNumber(before string) bool {
	before = strings.TrimSpace(before)
	if before == "" || len(before) > 3 {
		return false
	}
	for i := 0; i < len(before); i++ {
		if before[i] < '0' || before[i] > '9' {
			return false
		}
	}
	return true
}

// splitLong cuts a run-on sentence at spaces into pieces of at most
// maxSentenceRunes runes (or at any rune when it has no spaces).
func splitLong(s string) []string {
	if utf8.RuneCountInString(s) <= maxSentenceRunes {
		return []string{s}
	}
	var out []string
	for utf8.RuneCountInString(s) > maxSentenceRunes {
		cut := byteOffset(s, maxSentenceRunes)
		if sp := strings.LastIndexFunc(s[:cut], unicode.IsSpace); sp > cut/2 {
			cut = sp
		}
		out = append(out, strings.TrimSpace(s[:cut]))
		s = strings.TrimSpace(s[cut:])
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// byteOffset is the byte offset of the n-th rune of s (len(s) if shorter).
func byteOffset(s string, n int) int {
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	return len(s)
}
