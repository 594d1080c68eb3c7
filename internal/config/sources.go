package config

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
)

// Source is one `[[sources]]` entry: what `watch` (and `serve --watch`) keeps
// current. Exactly one of Path (a file or folder on this machine) and URL (an
// IMAP mailbox, imaps://USER@HOST[:PORT]/MAILBOX or imap://… with STARTTLS) is set.
type Source struct {
	// Path is a file or folder to watch; relative to the config file's folder.
	Path string `toml:"path"`
	// Kind forces the input format of Path (ingest --kind); "" detects it.
	Kind string `toml:"kind"`
	// URL is an IMAP mailbox to sync on Watch.IMAPIntervalSeconds (or at once
	// with IDLE).
	URL string `toml:"url"`
	// PasswordFile holds the IMAP password (the file must be mode 0600); without
	// it the password comes from OPENHUMAN_IMAP_PASSWORD or ~/.netrc.
	PasswordFile string `toml:"password_file"`
	// Insecure allows a plaintext IMAP connection, to a loopback address only.
	Insecure bool `toml:"insecure"`
}

// Watch tunes the watch loop.
type Watch struct {
	// RescanSeconds is how often every watched path is compared with what was
	// ingested, as the fallback where file events are not delivered (network and
	// container file systems): 300 by default; 0 turns the rescan off.
	RescanSeconds int `toml:"rescan_seconds"`
	// DebounceMS is how long the loop waits for file events to settle before it
	// reads a batch (editors write a file in several steps): 300 by default.
	DebounceMS int `toml:"debounce_ms"`
	// IMAPIntervalSeconds is how often an IMAP source is synced when its server
	// offers no IDLE (and the longest an IDLE waits): 120 by default.
	IMAPIntervalSeconds int `toml:"imap_interval_seconds"`
}

// defaultWatch are the watch loop's defaults (see Watch).
func defaultWatch() Watch {
	return Watch{RescanSeconds: 300, DebounceMS: 300, IMAPIntervalSeconds: 120}
}

// resolveSources makes the relative paths of [[sources]] relative to the config
// file's folder.
func (c *Config) resolveSources(base string) {
	for i := range c.Sources {
		s := &c.Sources[i]
		if s.Path != "" && !filepath.IsAbs(s.Path) && !strings.HasPrefix(s.Path, "~") {
			s.Path = filepath.Join(base, s.Path)
		}
		if s.PasswordFile != "" && !filepath.IsAbs(s.PasswordFile) && !strings.HasPrefix(s.PasswordFile, "~") {
			s.PasswordFile = filepath.Join(base, s.PasswordFile)
		}
	}
}

// validateSources reports what is wrong with [[sources]] and [watch].
func (c *Config) validateSources(bad func(key, msg string)) {
	for i, s := range c.Sources {
		key := fmt.Sprintf("sources[%d]", i)
		switch {
		case s.Path == "" && s.URL == "":
			bad(key, `needs path = "…" (a file or folder) or url = "imaps://USER@HOST/MAILBOX"`)
		case s.Path != "" && s.URL != "":
			bad(key, "has both path and url: use one [[sources]] entry for each")
		case s.URL != "":
			u, err := url.Parse(s.URL)
			if err != nil || (u.Scheme != "imap" && u.Scheme != "imaps") || u.Host == "" || u.User == nil || u.User.Username() == "" {
				bad(key+".url", fmt.Sprintf("must be imaps://USER@HOST[:PORT]/MAILBOX or imap://…, got %q", s.URL))
			} else if _, has := u.User.Password(); has {
				bad(key+".url", "holds a password: put it in password_file, OPENHUMAN_IMAP_PASSWORD or ~/.netrc instead")
			}
			if s.Kind != "" {
				bad(key+".kind", "applies to path only")
			}
		}
	}
	if c.Watch.RescanSeconds < 0 {
		bad("watch.rescan_seconds", fmt.Sprintf("must be 0 (off) or more, got %d", c.Watch.RescanSeconds))
	}
	if c.Watch.DebounceMS < 0 || c.Watch.DebounceMS > 60000 {
		bad("watch.debounce_ms", fmt.Sprintf("must be 0..60000, got %d", c.Watch.DebounceMS))
	}
	if c.Watch.IMAPIntervalSeconds < 5 {
		bad("watch.imap_interval_seconds", fmt.Sprintf("must be 5 or more, got %d", c.Watch.IMAPIntervalSeconds))
	}
}
