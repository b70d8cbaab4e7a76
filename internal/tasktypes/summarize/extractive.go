package summarize

import (
	"math"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Budget bounds an extractive summary.
type Budget struct {
	// MaxSentences is the most sentences picked. Default: a fifth of the
	// document's sentences, at least 1 and at most 5.
	MaxSentences int
	// MaxChars is the most characters (runes) of the summary, separators
	// included. Default 800.
	MaxChars int
}

// DefaultMaxChars is Budget.MaxChars's default.
const DefaultMaxChars = 800

func (b Budget) withDefaults(sentences int) Budget {
	if b.MaxSentences <= 0 {
		b.MaxSentences = min(5, max(1, (sentences+2)/5))
	}
	if b.MaxChars <= 0 {
		b.MaxChars = DefaultMaxChars
	}
	return b
}

// Extract is the built-in extractive summarizer. It splits text into
// sentences, weights each word by TF-IDF over the sentences, and scores a
// sentence by its cosine similarity to the document's centroid (how much it
// says about what the whole text is about), boosted by position (a
// document's and a paragraph's first sentences) and damped for fragments.
// It then picks sentences greedily by score, skipping ones too similar to
// those already picked (maximal marginal relevance) or too long for the
// budget, and returns them in their original order. A single sentence longer
// than the budget is cut at a word boundary with "…". It never panics.
func Extract(text string, b Budget) string {
	sents := splitSentences(text)
	if len(sents) == 0 {
		return ""
	}
	b = b.withDefaults(len(sents))
	vecs, ntoks := vectorize(sents)
	scores := centrality(vecs)
	// The document's opening boost goes to its first real sentence, not
	// to a title.
	opening := 0
	for opening < len(sents)-1 && ntoks[opening] <= 5 {
		opening++
	}
	for i, s := range sents {
		scores[i] *= positionWeight(s, i == opening, len(sents)) * lengthWeight(ntoks[i])
	}
	picked := pick(sents, vecs, scores, b)
	if len(picked) == 0 {
		// Nothing fits: cut the best sentence.
		best := 0
		for i := range scores {
			if scores[i] > scores[best] {
				best = i
			}
		}
		return truncateRunes(sents[best].text, b.MaxChars)
	}
	sort.Ints(picked)
	parts := make([]string, len(picked))
	for i, k := range picked {
		parts[i] = sents[k].text
	}
	return strings.Join(parts, " ")
}

// term is one entry of a sparse, L2-normalized TF-IDF vector.
type term struct {
	id int
	w  float64
}

// vectorize builds a TF-IDF vector per sentence (terms sorted by id) and
// counts each sentence's content tokens.
func vectorize(sents []sentence) ([][]term, []int) {
	ids := map[string]int{}
	ntoks := make([]int, len(sents))
	var df []int
	var count []int // per term id, for the sentence at hand
	type entry struct{ id, n int }
	entries := make([][]entry, len(sents))
	var touched []int
	for i, s := range sents {
		touched = touched[:0]
		tokens(s.text, func(tok []byte) {
			id, ok := ids[string(tok)]
			if !ok {
				id = len(ids)
				ids[string(tok)] = id
				df = append(df, 0)
				count = append(count, 0)
			}
			if count[id] == 0 {
				touched = append(touched, id)
			}
			count[id]++
			ntoks[i]++
		})
		es := make([]entry, len(touched))
		for j, id := range touched {
			es[j] = entry{id, count[id]}
			df[id]++
			count[id] = 0
		}
		entries[i] = es
	}
	n := float64(len(sents))
	vecs := make([][]term, len(sents))
	for i, es := range entries {
		v := make([]term, len(es))
		var norm float64
		for j, e := range es {
			w := (1 + math.Log(float64(e.n))) * math.Log(1+n/float64(df[e.id]))
			v[j] = term{e.id, w}
			norm += w * w
		}
		if norm > 0 {
			norm = math.Sqrt(norm)
			for j := range v {
				v[j].w /= norm
			}
		}
		slices.SortFunc(v, func(a, b term) int { return a.id - b.id })
		vecs[i] = v
	}
	return vecs, ntoks
}

// centrality is each sentence's cosine similarity to the centroid of the
// other sentences.
func centrality(vecs [][]term) []float64 {
	var centroid []float64 // dense, by term id
	for _, v := range vecs {
		for _, t := range v {
			for t.id >= len(centroid) {
				centroid = append(centroid, 0)
			}
			centroid[t.id] += t.w
		}
	}
	scores := make([]float64, len(vecs))
	if len(vecs) == 1 {
		scores[0] = 1
		return scores
	}
	for i, v := range vecs {
		// Centroid without this sentence, so a sentence is not central just
		// because it is long and unique.
		var dot float64
		for _, t := range v {
			dot += t.w * (centroid[t.id] - t.w)
		}
		scores[i] = dot
	}
	// Normalize by the centroid's norm once: the ranking only needs a
	// common scale.
	var norm float64
	for _, w := range centroid {
		norm += w * w
	}
	if norm > 0 {
		norm = math.Sqrt(norm)
		for i := range scores {
			scores[i] /= norm
		}
	}
	return scores
}

// positionWeight favours the opening sentence and paragraph leads, which in
// most prose state the topic.
func positionWeight(s sentence, opening bool, n int) float64 {
	w := 1.0
	if opening {
		w += 0.3
	}
	if s.lead {
		w += 0.15
	}
	// A gentle decay over the document: the first sentences weigh up to 10 % more.
	w += 0.1 * (1 - float64(s.index)/float64(n))
	return w
}

// lengthWeight damps fragments (headings, "Yes.") that carry little.
func lengthWeight(ntok int) float64 {
	switch {
	case ntok <= 2:
		return 0.3
	case ntok <= 5:
		return 0.7
	}
	return 1
}

// redundancy is the similarity above which a sentence repeats one already
// picked.
const redundancy = 0.6

// pick chooses sentence indexes by maximal marginal relevance within b.
func pick(sents []sentence, vecs [][]term, scores []float64, b Budget) []int {
	order := make([]int, len(sents))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, c int) bool { return scores[order[a]] > scores[order[c]] })
	var picked []int
	used := 0
	for _, k := range order {
		if len(picked) == b.MaxSentences {
			break
		}
		size := utf8.RuneCountInString(sents[k].text)
		if len(picked) > 0 {
			size++ // the joining space
		}
		if used+size > b.MaxChars {
			continue
		}
		dup := false
		for _, p := range picked {
			if cosine(vecs[k], vecs[p]) >= redundancy {
				dup = true
				break
			}
		}
		if dup {
			continue
		}
		picked = append(picked, k)
		used += size
	}
	return picked
}

func cosine(a, b []term) float64 {
	var dot float64
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i].id == b[j].id:
			dot += a[i].w * b[j].w
			i++
			j++
		case a[i].id < b[j].id:
			i++
		default:
			j++
		}
	}
	return dot
}

// tokens lowercases text and emits its content words: runs of letters and
// digits, minus stop words; scripts written without spaces (Han, kana,
// Thai...) give overlapping character pairs instead.
func tokens(text string, emit func(tok []byte)) {
	var word []byte // the current word, lower-cased UTF-8
	wordRunes := 0
	var run []rune // a run of unspaced-script characters
	var buf []byte
	flushWord := func() {
		if wordRunes > 0 {
			if !stopWords[string(word)] && (wordRunes > 1 || (word[0] >= '0' && word[0] <= '9')) {
				emit(word)
			}
			word, wordRunes = word[:0], 0
		}
	}
	flushRun := func() {
		switch len(run) {
		case 0:
		case 1:
			buf = utf8.AppendRune(buf[:0], run[0])
			emit(buf)
		default:
			for i := 0; i+1 < len(run); i++ {
				buf = utf8.AppendRune(utf8.AppendRune(buf[:0], run[i]), run[i+1])
				emit(buf)
			}
		}
		run = run[:0]
	}
	for _, r := range text {
		if r < utf8.RuneSelf { // ASCII fast path
			switch {
			case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
				if len(run) > 0 {
					flushRun()
				}
				word = append(word, byte(r))
				wordRunes++
			case r >= 'A' && r <= 'Z':
				if len(run) > 0 {
					flushRun()
				}
				word = append(word, byte(r+'a'-'A'))
				wordRunes++
			default:
				flushWord()
				flushRun()
			}
			continue
		}
		switch {
		case unspaced(r):
			flushWord()
			run = append(run, r)
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			flushRun()
			word = utf8.AppendRune(word, unicode.ToLower(r))
			wordRunes++
		default:
			flushWord()
			flushRun()
		}
	}
	flushWord()
	flushRun()
}

func unspaced(r rune) bool {
	if r < 0x0E00 { // below Thai: Latin, Greek, Cyrillic, Arabic, Indic...
		return false
	}
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Thai, unicode.Lao, unicode.Khmer, unicode.Myanmar)
}

// truncateRunes cuts s to at most n runes, at a word boundary when one is
// near, ending with "…".
func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n <= 1 {
		return s[:byteOffset(s, max(n, 0))]
	}
	cut := byteOffset(s, n-1)
	if sp := strings.LastIndexFunc(s[:cut], unicode.IsSpace); sp > cut*2/3 {
		cut = sp
	}
	return strings.TrimRightFunc(s[:cut], unicode.IsSpace) + "…"
}

// stopWords are frequent function words of English, French, German and
// Spanish; IDF handles the rest.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`
a about above after again against all also am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further had
has have having he her here hers herself him himself his how however i if in into is it its itself
just me more most my myself no nor not now of off on once only or other our ours ourselves out over
own same she should so some such than that the their theirs them themselves then there these they
this those through to too under until up very was we were what when where which while who whom why
will with would you your yours yourself yourselves one two may might must shall also yet still
le la les un une des du de et est en que qui dans pour pas sur au aux avec ce ces il elle ils elles
nous vous se sa son ses leur leurs ou mais plus par être été sont ont
der die das ein eine einer eines einem den dem des und ist sind nicht mit auf für von zu im in als
auch es sie er wir ihr sich dass wie bei aus nach oder
el los las una unos unas y es en que por para con del al lo se su sus como pero más o son fue
`) {
		m[w] = true
	}
	return m
}()
