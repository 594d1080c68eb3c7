package config

import (
	"strings"
	"testing"
)

// A password in a configured URL never reaches a message (issue 39): the
// SearXNG check names the URL with it redacted, parsable or not.
func TestURLPasswordsNeverShown(t *testing.T) {
	for _, u := range []string{"http://u:s3cret@127.0.0.1:9", "http://u:s3cret pw@127.0.0.1:9", "ftp://u:s3cret@x"} {
		if err := CheckBaseURL(u); err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("CheckBaseURL(%q) = %v", u, err)
		}
		if r := RedactURL(u); strings.Contains(r, "s3cret") {
			t.Errorf("RedactURL(%q) = %q", u, r)
		}
	}
	if r := RedactURL("http://localhost:11434"); r != "http://localhost:11434" {
		t.Errorf("a URL without credentials changed: %q", r)
	}
}
