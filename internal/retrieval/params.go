package retrieval

// Params holds every tunable of search and recall, grouped by the stage that reads
// it. What each is, how and on which data it was chosen, and its held-out result
// are in RATIONALE.md beside this file; code comments say only what a value does.
type Params struct {
	// Candidates: which chunks the full-text levels consider.

	// MaxDFShare: a query word in more than this share of the chunks is too
	// common to rank alone (it only fills the last places).
	MaxDFShare float64
	// MaxFillDF: a fill word in more chunks than this fills unranked.
	MaxFillDF int
	// DupSlack: extra candidates fetched so near-duplicates can move down.
	DupSlack int

	// Scoring: turns and messages.

	// ReplyShare of a turn's score passes to the next turn by another person.
	ReplyShare float64
	// SpeakerBoost: a turn by a participant the query names scores 1 + this.
	SpeakerBoost float64

	// Conversation-aware citation.

	// CiteShare: a chat hit cites its turns scoring at least this share of the
	// next hit's best turn.
	CiteShare float64
	// MinCiteWords: a plain keyword query of two or more words cites the
	// messages saying at least this many of them, when any does.
	MinCiteWords int
	// TurnShare: a chat turn with evidence that its chunk's hit does not cite
	// ranks on its own, as a further hit on that chunk, when its score is at least
	// this share of the chunk's best turn (above 1: never).
	TurnShare float64
	// NamedFirst: 1 makes a chat chunk found only through the person (or date) a
	// query names, saying none of its other words, cite that person's turns where
	// it ranks and rank the other participants' turns on their own below it
	// (0: only the messages naming the person are cited).
	NamedFirst float64
	// TimeBoost: a question asking when (AsksWhen) scores the turns telling a
	// time (SaysWhen) 1 + this.
	TimeBoost float64

	// Fusion (recall): weighted reciprocal rank over ranked lists.

	// RRFK is the reciprocal-rank constant: a list's hit at rank r adds
	// weight / (RRFK + r).
	RRFK float64
	// RecallDepth: candidates taken from each ranked list.
	RecallDepth int
	// Weights of the lists, relative to plain reciprocal-rank fusion's 1 (the
	// expansion, exact and vector lists weigh 1): the chunk bm25 list's Chunks,
	// the expansion list raised by ExpUnknown × the share of query words the store
	// never says, the association list's Assoc (scaled by (1 − ρ) and
	// coverage^Cover).
	Chunks, ExpUnknown, Assoc, Cover float64
	// Literal evidence ρ = min(1, literal hits / min(LitRef, LitShare × chunks)):
	// the chunk bm25 list weighs Chunks × ρ, the vector list 1 − ρ.
	LitRef, LitShare float64
	// Anchored: a query the store says at least this share of (weighted by the
	// store's vocabulary, EverydayWords) counts as fully said.
	Anchored float64
	// EverydayWords: the vocabulary size at which a word the store lacks counts
	// fully against the query's literal evidence.
	EverydayWords int

	// Expansion and association (recall's offline meaning signal).

	// MaxGroupTerms: the terms a query word brings, best first: its expansions
	// (expansion list) and its associates (association list).
	MaxGroupTerms int
	// RelPow flattens relation weights (weight^RelPow).
	RelPow float64
	// AssocSample chunks containing a word are read to find its associates.
	AssocSample int
	// SetRankRows chunks are read per term by the coordination ranking.
	SetRankRows int
	// MaxSkipRows: the chunks a list leaves out (those saying a query word or an
	// expanded member) are read up to this many.
	MaxSkipRows int

	// Meaning (meaning.go): the messages of the person a question names, ranked
	// by the cosine of their word-vector meaning to the question's.

	// MeaningSearch and MeaningRecall weigh the meaning list against search's
	// and recall's own hits below their literal lead (weighted reciprocal rank;
	// their own list weighs 1; recall's weight is × (1 − ρ), the query's literal
	// evidence); 0 turns it off. Off: no value held out a gain on LoCoMo
	// (RATIONALE.md, "Meaning"); the list is there for an embedder to feed.
	MeaningSearch, MeaningRecall float64
}

// DefaultParams returns the parameter set search and recall run with: the values
// chosen on the held-out folds (RATIONALE.md). An Engine takes its parameters by
// value, so a caller (a test exploring a knob) changes its own copy only.
func DefaultParams() Params {
	return Params{
		MaxDFShare: 0.2,
		MaxFillDF:  5000,
		DupSlack:   10,

		ReplyShare:   0.5,
		SpeakerBoost: 0.5,

		CiteShare:    0.8,
		MinCiteWords: 2,
		TurnShare:    1,
		NamedFirst:   1,
		TimeBoost:    2,

		RRFK:          60,
		RecallDepth:   50,
		Chunks:        4,
		ExpUnknown:    8,
		Assoc:         6,
		Cover:         3,
		LitRef:        22,
		LitShare:      22.0 / 3432,
		Anchored:      0.75,
		EverydayWords: 2000,

		MaxGroupTerms: 6,
		RelPow:        0.5,
		AssocSample:   30,
		SetRankRows:   400,
		MaxSkipRows:   4000,

		MeaningSearch: 0,
		MeaningRecall: 0,
	}
}
