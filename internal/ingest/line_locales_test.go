package ingest

import (
	"strings"
	"testing"

	"github.com/openhuman/openhuman-core/internal/ingest/chat"
	"github.com/openhuman/openhuman-core/internal/ingest/internal/readertest"
)

// TestLINELocales reads LINE chat histories saved in other languages: the
// conversation from a Chinese (traditional, simplified), Korean, Japanese
// group or Indonesian header; day lines with full-width parentheses, 年月日 and
// 년월일 dates, Korean dotted dates with spaces, and weekday-first dates with
// the day before the month (told by a day over 12); 上午/下午 and 오후 times.
func TestLINELocales(t *testing.T) {
	for _, c := range []struct {
		name, doc, conv string
		want            []appWant
	}{
		{"traditional chinese", "[LINE] 與王小明的聊天記錄\n儲存日期：2026/01/06 10:00\n\n2026/01/05（一）\n上午10:00\t王小明\t早安\n下午2:56\t李華\t午安\n",
			"王小明", []appWant{{"王小明", "早安", 2026, 1, 5, 10, 0, 0}, {"李華", "午安", 2026, 1, 5, 14, 56, 0}}},
		{"simplified chinese", "[LINE] 与王小明的聊天记录\n保存日期：2026/01/06 10:00\n\n2026年1月5日 星期一\n10:00\t王小明\t早上好\n2026年1月6日 星期二\n21:30\t王小明\t晚安\n",
			"王小明", []appWant{{"王小明", "早上好", 2026, 1, 5, 10, 0, 0}, {"王小明", "晚安", 2026, 1, 6, 21, 30, 0}}},
		{"korean", "[LINE] 민수님과의 대화\n저장한 날짜 : 2026. 1. 6. 10:00\n\n2026년 1월 5일 월요일\n오후 2:56\t민수\t안녕\n2026. 01. 06. (화)\n오전 9:00\t민수\t좋은 아침\n",
			"민수", []appWant{{"민수", "안녕", 2026, 1, 5, 14, 56, 0}, {"민수", "좋은 아침", 2026, 1, 6, 9, 0, 0}}},
		{"japanese group", "[LINE] 「旅行」のトーク履歴\n保存日時：2026/01/06 10:00\n\n2026年1月5日(月)\n午後3:00\t太郎\t集合は駅\n",
			"旅行", []appWant{{"太郎", "集合は駅", 2026, 1, 5, 15, 0, 0}}},
		{"indonesian, day first", "[LINE] Riwayat obrolan dengan Micah\nDisimpan pada: 14/01/2026 10:00\n\nSel, 13/01/2026\n10:00\tMicah\thalo\nRab, 04/02/2026\n11:00\tMicah\tsampai jumpa\n",
			"Micah", []appWant{{"Micah", "halo", 2026, 1, 13, 10, 0, 0}, {"Micah", "sampai jumpa", 2026, 2, 4, 11, 0, 0}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			appCheck(t, chat.LineReader{}, "chat.txt", c.doc, false, c.want)
			out, _ := readertest.Run(t, chat.LineReader{}, readertest.WriteFile(t, "chat.txt", c.doc))
			for _, src := range out.Sources {
				if !strings.HasPrefix(src.SourceID, "line:"+c.conv+"/") {
					t.Errorf("conversation %s, want %s", src.SourceID, c.conv)
				}
			}
		})
	}
}
