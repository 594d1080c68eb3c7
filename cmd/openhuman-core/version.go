package main

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"
)

// devBase is the version of an untagged build: the next release, as a semver
// pre-release.
const devBase = "0.1.0-dev"

// version is set with -ldflags "-X main.version=..."; otherwise Version derives
// it from the module's build information.
var version = ""

// Version reports the version the binary was built with, the same string for the
// same commit however it was built (shown by `version`, MCP serverInfo and /health):
//
//   - a release: the module's tag without its "v" ("0.2.0"), from `go install
//     …@v0.2.0` or a build of the tagged commit;
//   - any other commit: devBase+"+"+the first 12 hex digits of the commit
//     ("0.1.0-dev+b8e824c0a64d"), taken from vcs.revision (go build, go install in
//     a clone), from the pseudo-version (go install …@commit), or, when the build
//     recorded neither (go run, -buildvcs=false), from the git checkout the binary
//     was compiled from;
//   - devBase alone when none of these is known.
//
// Uncommitted changes are not marked: go run cannot see them, and one commit must
// give one string.
func Version() string {
	if version != "" {
		return version
	}
	return buildVersion()
}

var buildVersion = sync.OnceValue(func() string {
	bi, _ := debug.ReadBuildInfo()
	return versionFrom(bi, sourceRevision)
})

// releaseTag matches a release version: vMAJOR.MINOR.PATCH, no pre-release or build.
var releaseTag = regexp.MustCompile(`^v\d+\.\d+\.\d+$`)

// pseudoRev matches the revision at the end of a Go pseudo-version
// (v0.0.0-20261202010408-b8e824c0a64d, v1.2.4-0.2026…-b8e8…), with an optional +dirty.
var pseudoRev = regexp.MustCompile(`[.-]\d{14}-([0-9a-f]{12})(\+dirty)?$`)

// versionFrom computes Version from build information; gitRev looks the release
// tag and commit up in the source checkout when the build information has neither.
func versionFrom(bi *debug.BuildInfo, gitRev func() (tag, rev string)) string {
	rev := ""
	if bi != nil {
		mv := strings.TrimSuffix(bi.Main.Version, "+dirty")
		if m := pseudoRev.FindStringSubmatch(bi.Main.Version); m != nil {
			rev = m[1]
		} else if releaseTag.MatchString(mv) {
			return strings.TrimPrefix(mv, "v")
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				rev = s.Value[:12]
			}
		}
	}
	if rev == "" && gitRev != nil {
		tag, r := gitRev()
		if releaseTag.MatchString(tag) {
			return strings.TrimPrefix(tag, "v")
		}
		rev = r
	}
	if rev == "" {
		return devBase
	}
	return devBase + "+" + rev
}

// sourceRevision is the release tag (if any) and commit checked out in the source
// tree this file was compiled from, or "" (a -trimpath build, a moved tree, no git).
// go run records no VCS information, so this is how it reports the same version as
// go build of the same commit.
func sourceRevision() (tag, rev string) {
	_, file, _, ok := goruntime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return "", ""
	}
	// Reading the checkout's files answers in microseconds; running git twice cost
	// ~50–100 ms of every start (before the MCP initialize reply could be sent).
	if tag, rev, ok := readGitRevision(filepath.Dir(file)); ok {
		return tag, rev
	}
	git := func(args ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, "git", append([]string{"-C", filepath.Dir(file)}, args...)...).Output()
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(out))
	}
	rev = git("rev-parse", "HEAD")
	if len(rev) < 12 || strings.Trim(rev, "0123456789abcdef") != "" {
		return "", ""
	}
	for _, t := range strings.Fields(git("tag", "--points-at", "HEAD")) {
		if releaseTag.MatchString(t) {
			tag = t
		}
	}
	return tag, rev[:12]
}

// readGitRevision reads the commit checked out in the git checkout holding dir and
// the release tag pointing at it straight from the repository's files (HEAD, loose
// refs, packed-refs; worktrees and their common directory included). ok is false
// when the files do not settle it (no checkout found, an unusual layout, a loose
// annotated release tag whose target needs the object store): the caller then
// asks git.
func readGitRevision(dir string) (tag, rev string, ok bool) {
	gitDir := ""
	for d := dir; ; d = filepath.Dir(d) {
		p := filepath.Join(d, ".git")
		if fi, err := os.Stat(p); err == nil {
			if fi.IsDir() {
				gitDir = p
			} else if b, err := os.ReadFile(p); err == nil {
				g, found := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
				if !found {
					return "", "", false
				}
				if !filepath.IsAbs(g) {
					g = filepath.Join(d, g)
				}
				gitDir = g
			}
			break
		}
		if filepath.Dir(d) == d {
			return "", "", false
		}
	}
	if gitDir == "" {
		return "", "", false
	}
	common := gitDir
	if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		c := strings.TrimSpace(string(b))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		common = c
	}
	isHash := func(s string) bool { return len(s) == 40 && strings.Trim(s, "0123456789abcdef") == "" }
	packed, _ := os.ReadFile(filepath.Join(common, "packed-refs"))
	resolve := func(ref string) string {
		for _, d := range []string{gitDir, common} {
			if b, err := os.ReadFile(filepath.Join(d, filepath.FromSlash(ref))); err == nil {
				return strings.TrimSpace(string(b))
			}
		}
		sc := bufio.NewScanner(bytes.NewReader(packed))
		for sc.Scan() {
			if h, name, found := strings.Cut(sc.Text(), " "); found && name == ref {
				return h
			}
		}
		return ""
	}
	head, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return "", "", false
	}
	full := strings.TrimSpace(string(head))
	if ref, found := strings.CutPrefix(full, "ref: "); found {
		full = resolve(ref)
	}
	if !isHash(full) {
		return "", "", false
	}
	// Release tags: packed ones carry their peeled commit on a "^" line.
	sc := bufio.NewScanner(bytes.NewReader(packed))
	last := ""
	for sc.Scan() {
		line := sc.Text()
		if peeled, found := strings.CutPrefix(line, "^"); found {
			if peeled == full && releaseTag.MatchString(last) {
				tag = last
			}
			continue
		}
		h, name, _ := strings.Cut(line, " ")
		last = strings.TrimPrefix(name, "refs/tags/")
		if !strings.HasPrefix(name, "refs/tags/") {
			last = ""
		} else if h == full && releaseTag.MatchString(last) {
			tag = last
		}
	}
	entries, _ := os.ReadDir(filepath.Join(common, "refs", "tags"))
	for _, e := range entries {
		if e.IsDir() || !releaseTag.MatchString(e.Name()) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(common, "refs", "tags", e.Name()))
		if err != nil {
			return "", "", false
		}
		switch h := strings.TrimSpace(string(b)); {
		case h == full:
			tag = e.Name()
		case !isHash(h):
			return "", "", false
		default:
			// A lightweight tag of another commit, or an annotated tag: its loose
			// object names the commit; a packed object is left to git.
			target, known := looseTagTarget(common, h)
			if !known {
				return "", "", false
			}
			if target == full {
				tag = e.Name()
			}
		}
	}
	return tag, full[:12], true
}

// looseTagTarget reads the loose object h under the git directory common: for a
// tag object, the object it tags; for any other loose object, "" (it is not a tag
// of anything). known is false when the object is not stored loose.
func looseTagTarget(common, h string) (target string, known bool) {
	f, err := os.Open(filepath.Join(common, "objects", h[:2], h[2:]))
	if err != nil {
		return "", false
	}
	defer f.Close()
	zr, err := zlib.NewReader(f)
	if err != nil {
		return "", false
	}
	defer zr.Close()
	b, err := io.ReadAll(io.LimitReader(zr, 512))
	if err != nil && len(b) == 0 {
		return "", false
	}
	if !bytes.HasPrefix(b, []byte("tag ")) {
		return "", true
	}
	_, body, found := bytes.Cut(b, []byte{0})
	if !found {
		return "", false
	}
	obj, found := bytes.CutPrefix(body, []byte("object "))
	if !found || len(obj) < 40 {
		return "", false
	}
	return string(obj[:40]), true
}
