package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/taskflow/taskflow/extsvc"
	"github.com/taskflow/taskflow/internal/engine/keyspace"
	"github.com/taskflow/taskflow/internal/external/protocol"
	"github.com/taskflow/taskflow/internal/testrig/testredis"
	"github.com/taskflow/taskflow/internal/testrig/testwait"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// run starts the catalog service name on a real Redis, publishes one
// task.create per params and returns the outcome events by task id.
func run(t *testing.T, name string, params map[string]string) (map[string]protocol.Event, string) {
	t.Helper()
	rdb, ns := testredis.Client(t)
	k := protocol.NewKeys(keyspace.MustParse(ns))
	spec := Catalog[name]
	svc, err := extsvc.New(rdb, extsvc.Config{Name: spec.Service, Namespace: ns, Block: 50 * time.Millisecond})
	require.NoError(t, err)
	out := t.TempDir()
	spec.Register(svc, Options{OutputDir: out})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	defer func() { cancel(); require.NoError(t, <-done) }()

	pub := protocol.NewPublisher(rdb, 0, nil)
	for id, p := range params {
		e, err := protocol.New(protocol.TypeCreate, time.Now(), protocol.CreateData{TaskID: id, TaskType: spec.Types[0], Params: json.RawMessage(p), Attempt: 1})
		require.NoError(t, err)
		_, err = pub.Publish(ctx, k.Create(), e)
		require.NoError(t, err)
	}
	got := map[string]protocol.Event{}
	testwait.Until(t, 15*time.Second, 20*time.Millisecond, func() bool {
		for _, s := range []string{k.Completed(), k.Failed()} {
			xs, err := rdb.XRange(ctx, s, "-", "+").Result()
			require.NoError(t, err)
			for _, x := range xs {
				e, err := protocol.Decode(x.ID, x.Values)
				require.NoError(t, err)
				var d struct {
					TaskID string `json:"task_id"`
				}
				require.NoError(t, json.Unmarshal(e.Data, &d))
				got[d.TaskID] = e
			}
		}
		return len(got) >= len(params)
	}, func() string { return fmt.Sprintf("%d outcomes of %d tasks", len(got), len(params)) })
	require.Len(t, got, len(params))
	// Each result file is in the artifact store, as file_url says, and
	// the same as the local copy.
	for id, e := range got {
		d, err := protocol.As[protocol.CompletedData](e)
		if err != nil {
			continue // a failure
		}
		var r result
		require.NoError(t, json.Unmarshal(d.Result, &r))
		if spec.Types[0] == "text.wordcount" {
			require.Empty(t, r.FileURL, "the word count writes no file")
			continue
		}
		prefix := "/api/v1/results/" + id + "/files/"
		require.True(t, strings.HasPrefix(r.FileURL, prefix), r.FileURL)
		name := strings.TrimPrefix(r.FileURL, prefix)
		h, err := rdb.HGetAll(ctx, k.Artifact(id, name)).Result()
		require.NoError(t, err)
		require.NotEmpty(t, h["content_type"], name)
		local, err := os.ReadFile(filepath.Join(out, spec.Types[0], name))
		require.NoError(t, err)
		require.Equal(t, string(local), h["data"], "the stored file is the local copy")
		ttl, err := rdb.PTTL(ctx, k.Artifact(id, name)).Result()
		require.NoError(t, err)
		require.Greater(t, ttl, time.Hour, "kept as long as the streams' events")
		artifacts.Store(e.ID, []byte(h["data"]))
	}
	return got, out
}

// artifacts are the stored result files run found, by event id.
var artifacts sync.Map

type result struct {
	FileURL  string         `json:"file_url"`
	Summary  string         `json:"summary"`
	Metadata map[string]any `json:"metadata"`
}

func completed(t *testing.T, e protocol.Event) (result, []byte) {
	t.Helper()
	d, err := protocol.As[protocol.CompletedData](e)
	require.NoError(t, err, "event: %s", e.Data)
	var r result
	require.NoError(t, json.Unmarshal(d.Result, &r))
	b, ok := artifacts.Load(e.ID)
	require.True(t, ok, "no stored file for %s", r.FileURL)
	return r, b.([]byte)
}

func failedCode(t *testing.T, e protocol.Event) string {
	t.Helper()
	d, err := protocol.As[protocol.FailedData](e)
	require.NoError(t, err, "event: %s", e.Data)
	return d.Error.Code
}

func TestReportService(t *testing.T) {
	t.Parallel()
	got, _ := run(t, "report", map[string]string{
		"md":    `{"quarter":"q4","year":2024,"data":{"revenue":[100,120,150],"costs":[80,80,90]}}`,
		"pdf":   `{"quarter":"Q4","year":2024,"format":"pdf","data":{"revenue":[100,120,150]}}`,
		"empty": `{"quarter":"Q4","year":2024,"data":{}}`,
		"badq":  `{"quarter":"Q5","year":2024,"data":{"x":[1]}}`,
	})
	r, b := completed(t, got["md"])
	require.Contains(t, string(b), "| revenue | 3 | 370.00 | 123.33 | 100.00 | 150.00 | 50.00 |")
	require.Contains(t, string(b), "| costs | 3 | 250.00 |")
	require.Equal(t, "Q4 2024 report: 2 metrics", r.Summary)
	_, b = completed(t, got["pdf"])
	require.True(t, strings.HasPrefix(string(b), "%PDF-1.4"))
	require.Contains(t, string(b), "(revenue | 3 | 370.00")
	require.Equal(t, "INSUFFICIENT_DATA", failedCode(t, got["empty"]))
	require.Equal(t, "INVALID_PARAMS", failedCode(t, got["badq"]))
}

func TestAnalysisService(t *testing.T) {
	t.Parallel()
	got, _ := run(t, "analysis", map[string]string{
		"ok":  `{"csv":"city,temp,rain\nOslo,3,1.5\nRome,15,0\nOslo,5,\nLima,20,0.5\n"}`,
		"bad": `{"csv":"a,b\n1,2,3\n"}`,
	})
	r, b := completed(t, got["ok"])
	require.Equal(t, "4 rows, 3 columns (2 numeric)", r.Summary)
	var st Stats
	require.NoError(t, json.Unmarshal(b, &st))
	temp := st.Columns[1]
	require.True(t, temp.Numeric)
	require.InDelta(t, 10.75, *temp.Mean, 1e-9)
	require.InDelta(t, 10, *temp.Median, 1e-9)
	require.InDelta(t, 3, *temp.Min, 1e-9)
	require.InDelta(t, 20, *temp.Max, 1e-9)
	rain := st.Columns[2]
	require.Equal(t, 1, rain.Empty)
	require.InDelta(t, 2.0, *rain.Sum, 1e-9)
	city := st.Columns[0]
	require.False(t, city.Numeric)
	require.Equal(t, "Oslo", city.Top)
	require.Equal(t, 2, city.TopCount)
	require.Equal(t, "INVALID_PARAMS", failedCode(t, got["bad"]))
}

func TestDocumentService(t *testing.T) {
	t.Parallel()
	got, _ := run(t, "document", map[string]string{
		"html": `{"content":"<html><head><title>x</title><style>p{}</style></head><body><h1>Title</h1><p>Fish &amp; chips</p><script>evil()</script></body></html>"}`,
		"md":   `{"content":"# Head\n\nSome **bold** and a [link](http://x).\n","format":"markdown"}`,
		"none": `{"content":"   "}`,
	})
	r, b := completed(t, got["html"])
	require.Equal(t, "Title\n\nFish & chips\n", string(b))
	require.Equal(t, "html", r.Metadata["format"])
	_, b = completed(t, got["md"])
	require.Equal(t, "Head\n\nSome bold and a link.\n", string(b))
	require.Equal(t, "INVALID_PARAMS", failedCode(t, got["none"]))
}

func TestExportService(t *testing.T) {
	t.Parallel()
	got, _ := run(t, "export", map[string]string{
		"csv":   `{"rows":[{"b":1,"a":"x,y"},{"a":"z","c":null}]}`,
		"jsonl": `{"rows":[{"a":1},{"a":2}],"format":"jsonl"}`,
		"xml":   `{"rows":[{"a":1}],"format":"xml"}`,
	})
	_, b := completed(t, got["csv"])
	require.Equal(t, "a,b,c\n\"x,y\",1,\nz,,\n", string(b))
	_, b = completed(t, got["jsonl"])
	require.Equal(t, "{\"a\":1}\n{\"a\":2}\n", string(b))
	require.Equal(t, "INVALID_PARAMS", failedCode(t, got["xml"]))
}

func TestWordcountService(t *testing.T) {
	t.Parallel()
	got, _ := run(t, "wordcount", map[string]string{
		"ok":    `{"text":"The cat saw the dog.\nThe dog's bowl: 2 bowls, 2 cats."}`,
		"blank": `{"text":"  \n "}`,
		"none":  `{}`,
	})
	d, err := protocol.As[protocol.CompletedData](got["ok"])
	require.NoError(t, err)
	var r struct {
		Summary  string    `json:"summary"`
		Metadata WordCount `json:"metadata"`
	}
	require.NoError(t, json.Unmarshal(d.Result, &r))
	require.Equal(t, "12 words, 9 distinct", r.Summary)
	require.Equal(t, WordCount{Words: 12, Distinct: 9, Lines: 2, TopWords: []WordTally{
		{"the", 3}, {"2", 2}, {"bowl", 1}, {"bowls", 1}, {"cat", 1}}}, r.Metadata)
	require.Equal(t, "INVALID_PARAMS", failedCode(t, got["blank"]))
	require.Equal(t, "INVALID_PARAMS", failedCode(t, got["none"]))
}

func FuzzAnalyze(f *testing.F) {
	f.Add("a,b\n1,2\n3,x\n")
	f.Add("")
	f.Add("\"unterminated\n")
	f.Fuzz(func(t *testing.T, s string) {
		st, err := Analyze(s, ',')
		if err != nil {
			return
		}
		for _, c := range st.Columns {
			require.Equal(t, st.Rows, c.Count+c.Empty)
		}
	})
}

func FuzzExtractText(f *testing.F) {
	f.Add("<p>hi</p>", "html")
	f.Add("# h\n[a](b)", "markdown")
	f.Add("plain", "text")
	f.Fuzz(func(t *testing.T, s, format string) {
		out := ExtractText(s, format)
		require.True(t, strings.HasSuffix(out, "\n"))
		_ = guessFormat(s)
	})
}
