package httpapi_test

import (
	"bytes"
	"io"
	"net/http"
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
