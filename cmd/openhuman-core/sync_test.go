package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-imap"
	"github.com/emersion/go-imap/client"

	"github.com/openhuman/openhuman-core/internal/imapsync/dovecottest"
)

func imapMail(i int, word string) string {
	return fmt.Sprintf("From: Ann Lee <ann@example.org>\r\nTo: bob@example.org\r\nSubject: Mail %d\r\nDate: Tue, 03 Nov 2026 08:%02d:00 +0000\r\nMessage-ID: <cli%d@example.org>\r\n\r\nThis one mentions %s.\r\n", i, i%60, i, word)
}

func imapAppend(t *testing.T, c *client.Client, i int, word string) {
	t.Helper()
	if err := c.Append("INBOX", nil, time.Now(), bytes.NewBufferString(imapMail(i, word))); err != nil {
		t.Fatal(err)
	}
}

// TestSyncCommandAndWatchIMAPSource: `sync` over plaintext is refused without
// --insecure and works with it (password from OPENHUMAN_IMAP_PASSWORD); a
// message expunged on the server is forgotten at the next sync; `watch` with an
// IMAP [[sources]] entry finds a message APPENDed while it runs.
func TestSyncCommandAndWatchIMAPSource(t *testing.T) {
	s := dovecottest.Start(t)
	c, err := client.Dial(s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Logout()
	if err := c.Login(s.User, s.Pass); err != nil {
		t.Fatal(err)
	}
	imapAppend(t, c, 1, "saffronbox")
	imapAppend(t, c, 2, "cinnamonjar")
	e := newCLIEnv(t)
	url := fmt.Sprintf("imap://%s@%s:%s/INBOX", s.User, s.Host, s.Port)
	_, errOut, code := e.run("", "sync", url)
	if code == 0 || !strings.Contains(errOut, "no password") {
		t.Fatalf("sync without a password: exit %d\n%s", code, errOut)
	}
	e.extra = []string{"OPENHUMAN_IMAP_PASSWORD=" + s.Pass}
	_, errOut, code = e.run("", "sync", url)
	if code == 0 || !strings.Contains(errOut, "STARTTLS") {
		t.Fatalf("plaintext sync without --insecure: exit %d\n%s", code, errOut)
	}
	if strings.Contains(errOut, s.Pass) {
		t.Fatalf("the password appears on stderr:\n%s", errOut)
	}
	_, errOut, code = e.run("", "sync", "--insecure", url)
	if code != 0 || !strings.Contains(errOut, "2 new messages fetched") {
		t.Fatalf("sync --insecure: exit %d\n%s", code, errOut)
	}
	if cliHits(t, e, "saffronbox") != 1 || cliHits(t, e, "cinnamonjar") != 1 {
		t.Fatalf("synced messages not found once each\n%s", errOut)
	}
	// Expunge one on the server (the test acting as the mail user).
	if _, err := c.Select("INBOX", false); err != nil {
		t.Fatal(err)
	}
	set := new(imap.SeqSet)
	set.AddNum(1)
	if err := c.Store(set, imap.FormatFlagsOp(imap.AddFlags, true), []interface{}{imap.DeletedFlag}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Expunge(nil); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = e.run("", "sync", "--insecure", url)
	if code != 0 || !strings.Contains(errOut, "1 removed") {
		t.Fatalf("sync after an expunge: exit %d\n%s", code, errOut)
	}
	if n := cliHits(t, e, "saffronbox"); n != 0 {
		t.Errorf("a message expunged on the server still has %d hits", n)
	}
	if n := cliHits(t, e, "cinnamonjar"); n != 1 {
		t.Errorf("the other message has %d hits, want 1", n)
	}

	// watch with the mailbox as a [[sources]] entry.
	writeFile(t, filepath.Join(e.ohome, "config.toml"), fmt.Sprintf("[[sources]]\nurl = %q\ninsecure = true\n\n[watch]\nimap_interval_seconds = 5\ndebounce_ms = 100\n", url))
	w := startWatch(t, e)
	imapAppend(t, c, 3, "nutmegtin")
	took := waitCLIHits(t, e, w, "nutmegtin", 1, "message APPENDed while watch follows the mailbox")
	t.Logf("APPEND to search hit under watch: %.2f s (interval 5 s; Dovecot offers IDLE)", took.Seconds())
	if strings.Contains(w.log(), s.Pass) {
		t.Errorf("the password appears in watch's log")
	}
}
