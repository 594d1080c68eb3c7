package retrieval

// Term is one query word with its stem and document frequency (chunks saying it).
type Term struct {
	Word   string
	Stem   string
	DF     int
	Weight float64
}
