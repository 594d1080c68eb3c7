package analysis

import "testing"

// benchTexts are a chat turn in plain ASCII (the common case, served by the ASCII
// fast paths) and one with accents, a combining mark and emoji (the Unicode path).
var benchTexts = map[string]string{
	"ascii": "Hey Mel! Good to see you! I'm swamped with the kids & work. What's up? " +
		"We went running by the lake on Saturday and talked about the 1900s paintings.",
	"unicode": "Café naïve résumé with e\u0301tude, Straße and Ａｎｇｓｔｒöｍ; words🙂here " +
		"and 🧘🏻 stretching, Москва and ΑΘΗΝΑ, running by the lake on Saturday.",
}

func BenchmarkWords(b *testing.B) {
	for name, s := range benchTexts {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			for i := 0; i < b.N; i++ {
				for _, w := range Words(s) {
					_ = Stem(w)
				}
			}
		})
	}
}

func BenchmarkAppendDistinctTerms(b *testing.B) {
	for name, s := range benchTexts {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			var dst []string
			for i := 0; i < b.N; i++ {
				dst = AppendDistinctTerms(dst[:0], s)
			}
		})
	}
}
