package ingest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/openhuman/openhuman-core/internal/memtree"
)

// BenchmarkIngestScale ingests a -scale corpus (INGEST_BENCH_SCALE records, default
// 10000) into a fresh store per iteration and reports chunks/s and messages/s.
// INGEST_BENCH_PATH names an input to ingest instead (a file or folder written
// before, e.g. a -scale corpus's mail/scale.mbox), for profiling one format:
//
//	INGEST_BENCH_PATH=/tmp/s/mail/scale.mbox go test ./internal/ingest -run '^$' \
//	  -bench IngestScale -benchtime 1x -cpuprofile cpu.out
func BenchmarkIngestScale(b *testing.B) {
	scale := 10000
	if s := os.Getenv("INGEST_BENCH_SCALE"); s != "" {
		scale, _ = strconv.Atoi(s)
	}
	dir := os.Getenv("INGEST_BENCH_PATH")
	if dir == "" {
		gen := filepath.Join(sharedData(), "gencorpus")
		if _, err := os.Stat(filepath.Join(gen, "main.go")); err != nil {
			b.Skipf("corpus generator not found at %s", gen)
		}
		dir = filepath.Join(b.TempDir(), "scale")
		if out, err := exec.Command("go", "run", "-C", gen, ".", "-out", dir, "-scale", strconv.Itoa(scale)).CombinedOutput(); err != nil {
			b.Fatalf("gencorpus: %v\n%s", err, out)
		}
	}
	b.ResetTimer()
	var chunks, secs float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		st, err := memtree.Open(filepath.Join(b.TempDir(), "chunks.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		sum, err := Run(context.Background(), st, []string{dir}, Options{})
		if err != nil || sum.Failures != 0 {
			b.Fatalf("%v %v", err, sum.Errors)
		}
		chunks += float64(sum.ChunksNew)
		secs += sum.Seconds
		b.StopTimer()
		st.Close()
		b.StartTimer()
	}
	b.ReportMetric(chunks/secs, "chunks/s")
	if os.Getenv("INGEST_BENCH_PATH") == "" {
		b.ReportMetric(float64(scale)*float64(b.N)/secs, "records/s")
	}
}
