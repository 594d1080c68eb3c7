package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSourcesAndWatch(t *testing.T) {
	home := t.TempDir()
	file := filepath.Join(home, "config.toml")
	os.WriteFile(file, []byte(`[[sources]]
path = "notes"

[[sources]]
path = "/srv/mail/archive.mbox"
kind = "mbox"

[[sources]]
url = "imaps://me@gmail.com@imap.gmail.com/INBOX"
password_file = "imap-pass"

[watch]
rescan_seconds = 60
`), 0o600)
	cfg, _, err := Load(file, envMap(map[string]string{"OPENHUMAN_HOME": home}))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Sources) != 3 || cfg.Sources[0].Path != filepath.Join(home, "notes") || cfg.Sources[1].Kind != "mbox" ||
		cfg.Sources[2].PasswordFile != filepath.Join(home, "imap-pass") {
		t.Errorf("sources: %+v", cfg.Sources)
	}
	if cfg.Watch.RescanSeconds != 60 || cfg.Watch.DebounceMS != 300 || cfg.Watch.IMAPIntervalSeconds != 120 {
		t.Errorf("watch: %+v", cfg.Watch)
	}
	for body, want := range map[string]string{
		"[[sources]]\nkind = \"mbox\"\n":                                 "sources[0]: needs path",
		"[[sources]]\npath = \"a\"\nurl = \"imaps://u@h/INBOX\"\n":       "has both path and url",
		"[[sources]]\nurl = \"imaps://u:pw@h/INBOX\"\n":                  "holds a password",
		"[[sources]]\nurl = \"https://h/INBOX\"\n":                       "sources[0].url",
		"[watch]\nrescan_seconds = -1\n":                                 "watch.rescan_seconds",
		"[[sources]]\npath = \"a\"\nfolder = \"b\"\n":                    "unknown key",
		"[[sources]]\nurl = \"imaps://u@h/INBOX\"\nkind = \"maildir\"\n": "applies to path only",
	} {
		os.WriteFile(file, []byte(body), 0o600)
		_, _, err := Load(file, envMap(map[string]string{"OPENHUMAN_HOME": home}))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want it to say %q", body, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "pw@") {
			t.Errorf("the error repeats the password: %v", err)
		}
	}
}
