package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/taskflow/taskflow/extsvc"
)

// MaxWordcountBytes bounds text.wordcount's input.
const MaxWordcountBytes = 1 << 20

// WordCount is text.wordcount's statistics of a text.
type WordCount struct {
	Words    int         `json:"words"`
	Distinct int         `json:"distinct"`
	Lines    int         `json:"lines"`
	TopWords []WordTally `json:"top_words"`
}

// WordTally is one word and how often it occurs.
type WordTally struct {
	Word  string `json:"word"`
	Count int    `json:"count"`
}

// CountWords counts the words of text (runs of letters, digits and
// apostrophes, case folded) and lists the five most frequent, ties by
// word: what the Node example service computes for the same type.
func CountWords(text string) WordCount {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsNumber(r) && r != '\''
	})
	counts := map[string]int{}
	for _, w := range words {
		counts[w]++
	}
	top := make([]WordTally, 0, len(counts))
	for w, n := range counts {
		top = append(top, WordTally{Word: w, Count: n})
	}
	sort.Slice(top, func(i, j int) bool {
		if top[i].Count != top[j].Count {
			return top[i].Count > top[j].Count
		}
		return top[i].Word < top[j].Word
	})
	if len(top) > 5 {
		top = top[:5]
	}
	return WordCount{Words: len(words), Distinct: len(counts), Lines: strings.Count(text, "\n") + 1, TopWords: top}
}

type wordcountHandler struct{ o Options }

func (h wordcountHandler) Handle(ctx context.Context, t *extsvc.Task) (json.RawMessage, error) {
	var p struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(t.Params, &p); err != nil {
		return nil, invalid("params: %v", err)
	}
	if strings.TrimSpace(p.Text) == "" {
		return nil, invalid("params.text: required (a non-empty string)")
	}
	wc := CountWords(p.Text)
	return json.Marshal(map[string]any{
		"file_url": "",
		"summary":  fmt.Sprintf("%d words, %d distinct", wc.Words, wc.Distinct),
		"metadata": wc,
	})
}
