package httpapi_test

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
)

// BenchmarkSubmit measures POST /api/v1/tasks/summarize through a real
// HTTP server and a real Redis, from parallel clients.
func BenchmarkSubmit(b *testing.B) {
	for _, who := range []string{"Admin", "Session"} {
		b.Run(who, func(b *testing.B) {
			tb := setup(b)
			tok := adminKey
			if who == "Session" {
				tok = tb.session().Token
			}
			body := []byte(`{"content":"Load test sentence number one. Load test sentence number two. Load test sentence number three."}`)
			tr := &http.Transport{MaxIdleConnsPerHost: 256}
			defer tr.CloseIdleConnections()
			hc := &http.Client{Transport: tr}
			b.ReportAllocs()
			b.SetParallelism(16)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req, _ := http.NewRequest("POST", tb.srv.URL+"/api/v1/tasks/summarize", bytes.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Authorization", "Bearer "+tok)
					res, err := hc.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, res.Body)
					res.Body.Close()
					if res.StatusCode != http.StatusCreated {
						b.Errorf("HTTP %d", res.StatusCode)
						return
					}
				}
			})
		})
	}
}

// BenchmarkSubmitBatchVsSingle compares the API's two ways to create many
// tasks, per task: POST /api/v1/tasks once per task (parallel clients,
// whose submits the service writes together), and POST
// /api/v1/tasks/batch with 1000 tasks a request; with and without an
// Idempotency-Key. ns/op is per task in every case.
func BenchmarkSubmitBatchVsSingle(b *testing.B) {
	one := []byte(`{"task_type":"noop","params":{"n":1}}`)
	var batch bytes.Buffer
	batch.WriteString(`{"tasks":[`)
	for i := range 1000 {
		if i > 0 {
			batch.WriteByte(',')
		}
		batch.Write(one)
	}
	batch.WriteString(`]}`)
	post := func(b *testing.B, hc *http.Client, url string, body []byte, key string) {
		req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+adminKey)
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		res, err := hc.Do(req)
		if err != nil {
			b.Error(err)
			return
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode >= 300 {
			b.Errorf("HTTP %d", res.StatusCode)
		}
	}
	var seq atomic.Int64
	for _, c := range []struct {
		name  string
		batch bool
		idem  bool
	}{{"Single", false, false}, {"SingleIdempotent", false, true}, {"Batch1000", true, false}, {"Batch1000Idempotent", true, true}} {
		b.Run(c.name, func(b *testing.B) {
			tb := setup(b, setupOpts{maxBody: 4 << 20})
			tr := &http.Transport{MaxIdleConnsPerHost: 256}
			defer tr.CloseIdleConnections()
			hc := &http.Client{Transport: tr}
			key := func() string {
				if !c.idem {
					return ""
				}
				return "bench-" + strconv.FormatInt(seq.Add(1), 10)
			}
			b.ReportAllocs()
			b.ResetTimer()
			if c.batch {
				for done := 0; done < b.N; done += 1000 {
					post(b, hc, tb.srv.URL+"/api/v1/tasks/batch", batch.Bytes(), key())
				}
				return
			}
			b.SetParallelism(16)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					post(b, hc, tb.srv.URL+"/api/v1/tasks", one, key())
				}
			})
		})
	}
}
