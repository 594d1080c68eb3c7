package main

import (
	"context"
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
