package summarize

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func fixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name + ".txt")
	require.NoError(t, err)
	return string(b)
}

// picked maps a summary back to the indexes of the document's sentences it
// is made of, failing when a part is not one of them or order is broken.
func picked(t *testing.T, doc, summary string) []int {
	t.Helper()
	sents := splitSentences(doc)
	var idx []int
	rest := summary
	for rest != "" {
		found := -1
		for _, s := range sents {
			if strings.HasPrefix(rest, s.text) && (found < 0 || len(s.text) > len(sents[found].text)) {
				found = s.index
			}
		}
		require.GreaterOrEqual(t, found, 0, "summary part %q is not a sentence of the document", rest)
		idx = append(idx, found)
		rest = strings.TrimPrefix(strings.TrimPrefix(rest, sents[found].text), " ")
	}
	for i := 1; i < len(idx); i++ {
		require.Less(t, idx[i-1], idx[i], "sentences keep their original order")
	}
	return idx
}

func TestExtractPicksCentralSentences(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		must     []string // sentences about the topic the summary must include
		never    []string // asides it must leave out
		beyondP1 bool     // must reach past the first paragraph (not truncation)
	}{
		{
			name:     "heatpumps",
			must:     []string{"Norrvik has decided to replace every oil boiler"},
			never:    []string{"Biscuit", "fish soup", "# Norrvik"},
			beyondP1: true,
		},
		{
			name:     "library",
			must:     []string{"The city library began lending tools"},
			never:    []string{"stained-glass", "pressure washer"},
			beyondP1: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc := fixture(t, tc.name)
			sum := Extract(doc, Budget{})
			idx := picked(t, doc, sum)
			require.GreaterOrEqual(t, len(idx), 2)
			require.LessOrEqual(t, len(idx), 5)
			require.LessOrEqual(t, utf8.RuneCountInString(sum), DefaultMaxChars)
			for _, m := range tc.must {
				require.Contains(t, sum, m)
			}
			for _, n := range tc.never {
				require.NotContains(t, sum, n)
			}
			if tc.beyondP1 {
				sents := splitSentences(doc)
				require.Greater(t, sents[idx[len(idx)-1]].para, 1, "the summary draws on later paragraphs: %q", sum)
			}
		})
	}
}

func TestExtractIgnoresOffTopicOpening(t *testing.T) {
	t.Parallel()
	doc := "Good morning, everyone. " + fixture(t, "library")
	sum := Extract(doc, Budget{MaxSentences: 2})
	require.NotContains(t, sum, "Good morning")
	require.Contains(t, sum, "lending tools")
}

func TestExtractBudget(t *testing.T) {
	t.Parallel()
	doc := fixture(t, "heatpumps")
	t.Run("OneSentence", func(t *testing.T) {
		t.Parallel()
		sum := Extract(doc, Budget{MaxSentences: 1})
		require.Len(t, picked(t, doc, sum), 1)
		require.Contains(t, sum, "heat pumps by 2030")
	})
	t.Run("Chars", func(t *testing.T) {
		t.Parallel()
		for _, n := range []int{60, 150, 250, 400} {
			sum := Extract(doc, Budget{MaxChars: n, MaxSentences: 10})
			require.NotEmpty(t, sum)
			require.LessOrEqual(t, utf8.RuneCountInString(sum), n, "budget %d: %q", n, sum)
		}
	})
	t.Run("NothingFitsIsCut", func(t *testing.T) {
		t.Parallel()
		sum := Extract(doc, Budget{MaxChars: 25})
		require.True(t, strings.HasSuffix(sum, "…"), sum)
		require.LessOrEqual(t, utf8.RuneCountInString(sum), 25)
	})
}

func TestExtractEdgeCases(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in, want string
	}{
		{"Empty", "", ""},
		{"Blank", " \n\t\n ", ""},
		{"OneSentence", "Only this one sentence is here.", "Only this one sentence is here."},
		{"NoPunctuation", "words without any end", "words without any end"},
		{"Abbreviations", "Dr. Smith met Mr. Jones at 3.30 p.m. in the U.S. office.", "Dr. Smith met Mr. Jones at 3.30 p.m. in the U.S. office."},
		{"Duplicates", "Cats sleep a lot. Cats sleep a lot. Cats sleep a lot.", "Cats sleep a lot."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, Extract(tc.in, Budget{MaxSentences: 3}))
		})
	}
	t.Run("LongSingleSentence", func(t *testing.T) {
		t.Parallel()
		in := strings.Repeat("very ", 400) + "long."
		sum := Extract(in, Budget{MaxChars: 100})
		require.LessOrEqual(t, utf8.RuneCountInString(sum), 100)
		require.True(t, strings.HasPrefix(sum, "very very"))
	})
}

func TestExtractNonEnglish(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"french":  "La ville de Lyon a ouvert une nouvelle ligne de tramway",
		"russian": "В Новосибирске открылся новый научный музей для детей.",
		"chinese": "杭州市今年开通了一条新的地铁线路。",
	}
	for name, topic := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			doc := fixture(t, name)
			sum := Extract(doc, Budget{})
			picked(t, doc, sum)
			require.Contains(t, sum, topic)
			require.True(t, utf8.ValidString(sum))
		})
	}
	t.Run("ChineseSplits", func(t *testing.T) {
		t.Parallel()
		require.Len(t, splitSentences(fixture(t, "chinese")), 7)
	})
}

func TestExtractHugeInput(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := 0; b.Len() < 2<<20; i++ {
		fmt.Fprintf(&b, "Report %d. %s\n\n", i, fixture(t, []string{"heatpumps", "library", "french"}[i%3]))
	}
	doc := b.String()
	sum := Extract(doc, Budget{})
	require.NotEmpty(t, sum)
	require.LessOrEqual(t, utf8.RuneCountInString(sum), DefaultMaxChars)
	for _, w := range strings.Fields(sum) {
		require.Contains(t, doc, w)
	}
	// No punctuation and no spaces at all: cut into pieces, still bounded.
	sum = Extract(strings.Repeat("x", 1<<20), Budget{})
	require.LessOrEqual(t, utf8.RuneCountInString(sum), DefaultMaxChars)
}

func TestSplitSentences(t *testing.T) {
	t.Parallel()
	got := splitSentences("Title line\n\nFirst one. Second one?! \"Third,\" he said. Fourth…\n- item one\n- item two\n1. numbered")
	var texts []string
	for _, s := range got {
		texts = append(texts, s.text)
	}
	require.Equal(t, []string{"Title line", "First one.", "Second one?!", "\"Third,\" he said.", "Fourth…", "- item one", "- item two", "1. numbered"}, texts)
}

func FuzzExtract(f *testing.F) {
	f.Add("Hello world. This is a test.", 0, 0)
	f.Add(fixtureF(f, "heatpumps"), 2, 100)
	f.Add(fixtureF(f, "chinese"), 1, 5)
	f.Add("a. b. c.", 1, 1)
	f.Add("\xff\xfe. \x00 ...", 3, 2)
	f.Add("# h\n\n- a\n1) b\n\n", -1, -5)
	f.Fuzz(func(t *testing.T, text string, maxSentences, maxChars int) {
		maxSentences %= 50
		maxChars %= 5000
		b := Budget{MaxSentences: maxSentences, MaxChars: maxChars}
		sum := Extract(text, b)
		limit := maxChars
		if limit <= 0 {
			limit = DefaultMaxChars
		}
		if n := utf8.RuneCountInString(sum); n > limit {
			t.Fatalf("summary of %d runes over the budget %d", n, limit)
		}
		if utf8.ValidString(text) && !utf8.ValidString(sum) {
			t.Fatalf("invalid UTF-8 out of valid input: %q", sum)
		}
		if !strings.HasSuffix(sum, "…") {
			for _, w := range strings.Fields(sum) {
				if !strings.Contains(text, w) {
					t.Fatalf("word %q is not in the input", w)
				}
			}
		}
	})
}

func fixtureF(f *testing.F, name string) string {
	b, err := os.ReadFile("testdata/" + name + ".txt")
	if err != nil {
		f.Fatal(err)
	}
	return string(b)
}

func BenchmarkExtract(b *testing.B) {
	doc := fixture(b, "heatpumps") + "\n\n" + fixture(b, "library")
	b.ReportAllocs()
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		Extract(doc, Budget{})
	}
}

func BenchmarkExtractHuge(b *testing.B) {
	var sb strings.Builder
	for i := 0; sb.Len() < 1<<20; i++ {
		fmt.Fprintf(&sb, "Report %d. %s\n\n", i, fixture(b, []string{"heatpumps", "library", "french"}[i%3]))
	}
	doc := sb.String()
	b.ReportAllocs()
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		Extract(doc, Budget{})
	}
}
