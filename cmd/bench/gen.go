package main

import (
	"bufio"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"time"
)

// genMbox writes n invented mail messages to path as an mbox: 60 people at
// .example addresses, threads of 1–8 messages, bodies of 30–250 words drawn from
// a Zipf-distributed vocabulary of common English and made-up words (so queries
// of every document frequency exist), over the year before 2026-06-01. The same
// n gives the same bytes. It returns the number of bytes written.
func genMbox(path string, n int) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, fmt.Errorf("create %s: %w", path, err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	r := rand.New(rand.NewPCG(19, uint64(n)))
	vocab := makeVocab(r)
	zipf := newZipf(r, len(vocab))
	people := makePeople(r)
	end := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	span := 365 * 24 * time.Hour
	type thread struct {
		subject string
		lastID  string
		refs    []string
		left    int
		ts      time.Time
	}
	var open []*thread
	var size int64
	for i := 0; i < n; i++ {
		var t *thread
		if len(open) > 0 && r.IntN(3) > 0 {
			k := r.IntN(len(open))
			t = open[k]
			if t.left--; t.left <= 0 {
				open = append(open[:k], open[k+1:]...)
			}
			t.ts = t.ts.Add(time.Duration(r.IntN(48*60)) * time.Minute)
		} else {
			words := make([]string, 2+r.IntN(4))
			for j := range words {
				words[j] = vocab[zipf.next()]
			}
			t = &thread{subject: strings.Join(words, " "), left: r.IntN(8), ts: end.Add(-time.Duration(r.Int64N(int64(span))))}
			if t.left > 0 {
				open = append(open, t)
			}
		}
		from := people[r.IntN(len(people))]
		to := people[r.IntN(len(people))]
		id := fmt.Sprintf("<m%06d.%d@bench.example>", i, r.Uint32())
		var b strings.Builder
		fmt.Fprintf(&b, "From %s %s\n", from.addr, t.ts.Format("Mon Jan _2 15:04:05 2006"))
		fmt.Fprintf(&b, "From: %s <%s>\nTo: %s <%s>\n", from.name, from.addr, to.name, to.addr)
		subj := t.subject
		if t.lastID != "" {
			subj = "Re: " + subj
		}
		fmt.Fprintf(&b, "Subject: %s\nDate: %s\nMessage-ID: %s\n", subj, t.ts.Format(time.RFC1123Z), id)
		if t.lastID != "" {
			fmt.Fprintf(&b, "In-Reply-To: %s\nReferences: %s\n", t.lastID, strings.Join(t.refs, " "))
		}
		b.WriteString("MIME-Version: 1.0\nContent-Type: text/plain; charset=utf-8\n\n")
		fmt.Fprintf(&b, "Hi %s,\n\n", strings.Fields(to.name)[0])
		words := 30 + r.IntN(220)
		line := 0
		for j := 0; j < words; j++ {
			word := vocab[zipf.next()]
			if r.IntN(40) == 0 {
				word = people[r.IntN(len(people))].name
			}
			b.WriteString(word)
			line += len(word) + 1
			switch {
			case r.IntN(12) == 0:
				b.WriteString(".\n")
				line = 0
				if r.IntN(4) == 0 {
					b.WriteString("\n")
				}
			case line > 66:
				b.WriteString("\n")
				line = 0
			default:
				b.WriteString(" ")
			}
		}
		fmt.Fprintf(&b, ".\n\nThanks,\n%s\n\n", strings.Fields(from.name)[0])
		t.refs = append(t.refs, id)
		t.lastID = id
		k, err := w.WriteString(b.String())
		size += int64(k)
		if err != nil {
			f.Close()
			return size, fmt.Errorf("write %s: %w", path, err)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return size, fmt.Errorf("write %s: %w", path, err)
	}
	return size, f.Close()
}

type person struct{ name, addr string }

func makePeople(r *rand.Rand) []person {
	first := []string{"Ada", "Bruno", "Chiara", "Dmitri", "Elena", "Farid", "Greta", "Hiro", "Ines", "Jonas", "Keiko", "Luca", "Maya", "Nils", "Olga", "Pavel", "Quinn", "Rosa", "Sami", "Tess"}
	last := []string{"Abbott", "Berg", "Costa", "Dahl", "Eriksen", "Fontaine", "Garcia", "Holm", "Ivanova", "Jensen", "Kowalski", "Lindqvist", "Moreau", "Novak", "Okafor"}
	out := make([]person, 0, 60)
	seen := map[string]bool{}
	for len(out) < 60 {
		f, l := first[r.IntN(len(first))], last[r.IntN(len(last))]
		if seen[f+l] {
			continue
		}
		seen[f+l] = true
		out = append(out, person{name: f + " " + l, addr: strings.ToLower(f+"."+l) + "@bench.example"})
	}
	return out
}

// makeVocab returns common English words first (the head of the Zipf
// distribution), then made-up words of 2–4 syllables (the long tail).
func makeVocab(r *rand.Rand) []string {
	common := strings.Fields(`the of and to in is that for it as with was on be at by this have from or
		had not are but what all were when we there can an your which their said if do will each about how up
		out them then she many some so these would other into has more her two like him see time could no make
		than first been its who now people my made over did down only way find use may water long little very
		after words called just where most know get through back much before go good new write our used me man
		too any day same right look think also around another came come work three word must because does part
		even place well such here take why things help put years different away again off went old number great
		tell men say small every found still between name should home big give air line set own under read last
		never us left end along while might next sound below saw something thought both few those always looked
		show large often together asked house world going want school important until form food keep children
		feet land side without boy once animals life enough took sometimes four head above kind began almost
		live page got earth need far hand high year mother light parts country father let night following
		picture being study second eyes soon times story boys since white days ever paper hard near sentence
		better best across during today others however sure means knew it's try told young miles sun ways thing
		whole hear example heard several change answer room sea against top turned learn point city play toward
		five using himself usually budget launch contract meeting deadline review hiring outage release invoice
		roadmap quarter customer design migration database server report schedule travel flight hotel dinner`)
	syl := strings.Fields("ba be bi bo bu ka ke ki ko ku la le li lo lu ma me mi mo mu na ne ni no nu ra re ri ro ru sa se si so su ta te ti to tu va ve vi vo vu za ze zi zo zu dra tre pli sko")
	out := append([]string(nil), common...)
	seen := map[string]bool{}
	for _, w := range common {
		seen[w] = true
	}
	for len(out) < 6000 {
		k := 2 + r.IntN(3)
		var b strings.Builder
		for j := 0; j < k; j++ {
			b.WriteString(syl[r.IntN(len(syl))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// zipf draws ranks 0..n-1 with probability ∝ 1/(rank+1)^1.05.
type zipf struct {
	r   *rand.Rand
	cdf []float64
}

func newZipf(r *rand.Rand, n int) *zipf {
	cdf := make([]float64, n)
	sum := 0.0
	for i := range cdf {
		sum += 1 / math.Pow(float64(i+1), 1.05)
		cdf[i] = sum
	}
	for i := range cdf {
		cdf[i] /= sum
	}
	return &zipf{r: r, cdf: cdf}
}

func (z *zipf) next() int {
	u := z.r.Float64()
	lo, hi := 0, len(z.cdf)-1
	for lo < hi {
		mid := (lo + hi) / 2
		if z.cdf[mid] < u {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}
