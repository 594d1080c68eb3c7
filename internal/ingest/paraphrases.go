package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/openhuman/openhuman-core/internal/memtree"
	"github.com/openhuman/openhuman-core/internal/pivot"
)

// paraphraseHeapLimit is the soft memory limit (runtime/debug.SetMemoryLimit)
// Paraphrases builds under, unless GOMEMLIMIT is set or a lower limit is in force.
// The build from FreeDict English-German keeps under 100 MB live; without a limit
// the collector lets the heap grow to twice that (peak RSS 230 MB against 185 MB
// with it, in the same time).
const paraphraseHeapLimit = 160 << 20

// ParaphraseResult says what Paraphrases did.
type ParaphraseResult struct {
	// Dictionaries are the names of the dictionaries found ("freedict-eng-deu").
	Dictionaries []string
	// Words is how many words the stored table holds (0 when Unchanged).
	Words int
	// Unchanged is true when the store's table was already built from these files.
	Unchanged bool
	// Cached is true when the store now reads a table this machine built before
	// from the same dictionaries (see ParaphraseCacheDir).
	Cached bool
	// Removed is true when a table was removed because no dictionary is present.
	Removed bool
	Seconds float64
}

// Paraphrases brings the store's paraphrase table in line with the translating
// dictionaries at bases (dictd paths without extension; those that do not exist are
// left out): it rebuilds the table when the files differ from the ones it was built
// from, and removes it when none is present. Building streams the dictionaries
// (about 180 MB of text for FreeDict English-German) one entry at a time and takes
// some seconds, so it happens once per machine, not per store: the table is
// kept in ParaphraseCacheDir and a store only records which file it reads. It lowers the process's soft
// memory limit while it builds (see paraphraseHeapLimit).
func Paraphrases(ctx context.Context, store *memtree.Store, bases []string) (*ParaphraseResult, error) {
	start := time.Now()
	res := &ParaphraseResult{}
	present, source, err := dictionaries(bases)
	if err != nil {
		return nil, err
	}
	for _, b := range present {
		res.Dictionaries = append(res.Dictionaries, filepath.Base(b))
	}
	cur, err := store.ParaphraseSource(ctx)
	if err != nil {
		return nil, err
	}
	file := ""
	if len(present) > 0 {
		file = paraphraseCacheFile(source)
	}
	if cur == source {
		// Unchanged, unless the store reads a machine-wide file that is gone.
		f, err := store.ParaphraseFile(ctx)
		if err != nil {
			return nil, err
		}
		if _, statErr := os.Stat(f); f == "" || statErr == nil {
			res.Unchanged = true
			return res, nil
		}
	}
	if len(present) == 0 {
		if err := store.SetParaphrases(ctx, "", nil); err != nil {
			return nil, err
		}
		res.Removed = true
		return res, nil
	}
	if file != "" {
		if got, ok := memtree.ParaphraseFileSource(ctx, file); ok && got == source {
			if err := store.UseParaphraseFile(ctx, source, file); err != nil {
				return nil, err
			}
			res.Cached = true
			res.Seconds = time.Since(start).Seconds()
			return res, nil
		}
	}
	entries, err := buildParaphrases(ctx, present)
	if err != nil {
		return nil, err
	}
	if file != "" {
		if err := memtree.WriteParaphraseFile(ctx, file, source, entries); err != nil {
			// An unwritable cache directory: the store keeps its own copy, as
			// before there was a machine-wide one.
			slog.Warn("ingest: could not keep the paraphrase table for the machine; this store keeps its own copy", "err", err)
			file = ""
		}
	}
	if file == "" {
		if err := store.SetParaphrases(ctx, source, entries); err != nil {
			return nil, err
		}
	} else if err := store.UseParaphraseFile(ctx, source, file); err != nil {
		return nil, err
	}
	res.Words = len(entries)
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// dictionaries returns the translating dictionaries of bases that are installed
// and the source naming them (their files' fingerprints).
func dictionaries(bases []string) (present []string, source string, err error) {
	var parts []string
	for _, b := range bases {
		index, data, ok := pivot.Files(b)
		if !ok {
			continue
		}
		fp, err := fingerprint(index, data)
		if err != nil {
			return nil, "", err
		}
		present = append(present, b)
		parts = append(parts, fp)
	}
	return present, strings.Join(parts, "; "), nil
}

// buildParaphrases pivots the dictionaries at present into paraphrase entries, one
// dictionary after the other, one entry at a time: reading them whole and in
// parallel peaked at 700-900 MB. It lowers the soft memory limit meanwhile.
func buildParaphrases(ctx context.Context, present []string) ([]pivot.Entry, error) {
	if os.Getenv("GOMEMLIMIT") == "" {
		if prev := debug.SetMemoryLimit(-1); prev > paraphraseHeapLimit {
			debug.SetMemoryLimit(paraphraseHeapLimit)
			defer debug.SetMemoryLimit(prev)
		}
	}
	b := pivot.NewBuilder()
	for _, base := range present {
		if err := b.ReadDictionary(ctx, base); err != nil {
			return nil, err
		}
	}
	return b.Finish(ctx)
}

// MachineParaphraseFile returns the machine-wide paraphrase file of the
// dictionaries at bases, for a backend that keeps no paraphrase table of its own
// (PostgreSQL reads it through memtree.ExpandWithParaphraseFile): "" when none of
// them is installed, when there is no cache directory, or when the file is not
// built and build is false. With build, a missing file is built (seconds; what
// `ingest` does).
func MachineParaphraseFile(ctx context.Context, bases []string, build bool) (string, error) {
	file, _, err := machineParaphraseFile(ctx, bases, build)
	return file, err
}

// BuildMachineParaphraseFile is MachineParaphraseFile building a missing file
// (what `ingest` into a backend without a table of its own does), saying what
// it did as Paraphrases does: Words and Seconds are set when it built the file,
// Cached when the machine had it already.
func BuildMachineParaphraseFile(ctx context.Context, bases []string) (string, *ParaphraseResult, error) {
	return machineParaphraseFile(ctx, bases, true)
}

func machineParaphraseFile(ctx context.Context, bases []string, build bool) (string, *ParaphraseResult, error) {
	start := time.Now()
	res := &ParaphraseResult{}
	present, source, err := dictionaries(bases)
	if err != nil || len(present) == 0 {
		return "", res, err
	}
	for _, b := range present {
		res.Dictionaries = append(res.Dictionaries, filepath.Base(b))
	}
	file := paraphraseCacheFile(source)
	if file == "" {
		return "", res, nil
	}
	if got, ok := memtree.ParaphraseFileSource(ctx, file); ok && got == source {
		res.Cached = true
		return file, res, nil
	}
	if !build {
		return "", res, nil
	}
	entries, err := buildParaphrases(ctx, present)
	if err != nil {
		return "", res, err
	}
	if err := memtree.WriteParaphraseFile(ctx, file, source, entries); err != nil {
		return "", res, err
	}
	res.Words = len(entries)
	res.Seconds = time.Since(start).Seconds()
	return file, res, nil
}

// ParaphraseCacheDir is where paraphrase tables are kept, one per set of
// dictionaries and pivot.Version, shared by every store of the machine: under
// $OPENHUMAN_CACHE_DIR when set, else openhuman-core in the user's cache directory
// (os.UserCacheDir, where Go keeps its compile cache). "" when there is none (no
// HOME): each store then keeps its own copy.
func ParaphraseCacheDir() string {
	if d := os.Getenv("OPENHUMAN_CACHE_DIR"); d != "" {
		return d
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "openhuman-core")
}

// paraphraseCacheFile is the file of the table built from source ("" when there is
// no cache directory).
func paraphraseCacheFile(source string) string {
	dir := ParaphraseCacheDir()
	if dir == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(pivot.Version + "\n" + source))
	return filepath.Join(dir, "paraphrases-"+hex.EncodeToString(sum[:12])+".db")
}

// fingerprint names a dictionary's files by name, size and modification time.
func fingerprint(files ...string) (string, error) {
	var b strings.Builder
	for i, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			return "", fmt.Errorf("dictionary: %w", err)
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s:%d:%d", filepath.Base(f), fi.Size(), fi.ModTime().Unix())
	}
	return b.String(), nil
}
