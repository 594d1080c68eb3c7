package chat

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/ingest/internal/readertest"
	"github.com/openhuman/openhuman-core/internal/ingest/readkit"
)

// BenchmarkWhatsAppRead reads a 60,000-message Android export (24-hour clock, a
// continuation line every fifth message) with the WhatsApp reader alone.
func BenchmarkWhatsAppRead(b *testing.B) {
	var sb strings.Builder
	authors := []string{"Alice Smith", "Bob", "+1 555 123 4567", "Carol"}
	for i := 0; i < 60000; i++ {
		d, h, m := 1+i/1440%28, i/60%24, i%60
		fmt.Fprintf(&sb, "%02d/%02d/2021, %02d:%02d - %s: message number %d about the weekend plans and the shopping list\n", d, 1+i/40320%12, h, m, authors[i%4], i)
		if i%5 == 0 {
			sb.WriteString("a second line of the same message\n")
		}
	}
	p := filepath.Join(b.TempDir(), "WhatsApp Chat with Bench.txt")
	if err := os.WriteFile(p, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(sb.Len()))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, rep := &readertest.Output{}, readkit.NewReport(nil)
		WhatsAppReader{}.Read(context.Background(), readkit.Input{Path: p, Root: filepath.Dir(p), Rel: filepath.Base(p)}, out, rep)
		if len(out.Sources) == 0 || rep.Sum.Failures != 0 {
			b.Fatalf("%d sources, failures %v", len(out.Sources), rep.Sum.Errors)
		}
	}
}
