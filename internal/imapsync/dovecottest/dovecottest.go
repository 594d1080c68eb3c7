// Package dovecottest starts a real Dovecot IMAP server (Debian's dovecot-imapd)
// for tests: on a free loopback port, with a throwaway configuration in a
// temporary folder (passwd-file authentication, Maildir storage, no system
// configuration), plaintext (loopback only), stopped when the test ends.
package dovecottest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Server is a running Dovecot.
type Server struct {
	Addr       string // 127.0.0.1:PORT
	Host, Port string
	User, Pass string
	// Maildir is the user's mail folder on disk.
	Maildir string
	dir     string
}

// Start starts Dovecot or skips the test saying what is missing (under CI=true,
// where .ci/run installs dovecot-imapd, it fails instead).
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("dovecot")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/dovecot"); serr == nil {
			bin = "/usr/sbin/dovecot"
		}
	}
	missing := ""
	if bin == "" {
		missing = "dovecot is not installed (Debian package dovecot-imapd, which .ci/run installs)"
	}
	var loginUser, internalUser, mailUser *user.User
	if missing == "" && os.Geteuid() == 0 {
		// Dovecot refuses to run its login processes or mail access as root.
		loginUser, err = user.Lookup("dovenull")
		if err == nil {
			internalUser, err = user.Lookup("dovecot")
		}
		if err != nil {
			missing = "running as root needs the users dovenull and dovecot (made by the dovecot-core package): " + err.Error()
		}
		mailUser = internalUser
	} else if missing == "" {
		me, err := user.Current()
		if err != nil {
			missing = "no current user: " + err.Error()
		}
		loginUser, internalUser, mailUser = me, me, me
	}
	if missing != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("cannot start Dovecot: %s", missing)
		}
		t.Skipf("not run: %s", missing)
	}
	// A short path: Dovecot's unix sockets live in base_dir (108-byte limit).
	dir, err := os.MkdirTemp("", "dv")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	for _, d := range []string{"run", "state", home} {
		if err := os.MkdirAll(filepath.Join(dir, strings.TrimPrefix(d, dir)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	uid, _ := strconv.Atoi(mailUser.Uid)
	gid, _ := strconv.Atoi(mailUser.Gid)
	if os.Geteuid() == 0 {
		if err := os.Chown(home, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	s := &Server{Host: "127.0.0.1", Port: port, Addr: "127.0.0.1:" + port, User: "alice", Pass: "app-password-1234",
		Maildir: filepath.Join(home, "alice", "Maildir"), dir: dir}
	if err := os.WriteFile(filepath.Join(dir, "passwd"), []byte(s.User+":{PLAIN}"+s.Pass+"::::::\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	group := func(u *user.User) string {
		if g, err := user.LookupGroupId(u.Gid); err == nil {
			return g.Name
		}
		return u.Username
	}
	conf := fmt.Sprintf(`base_dir = %[1]s/run
state_dir = %[1]s/state
log_path = %[1]s/dovecot.log
instance_name = dv-%[2]s
protocols = imap
listen = 127.0.0.1
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
default_internal_user = %[3]s
default_internal_group = %[4]s
default_login_user = %[5]s
first_valid_uid = 0
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%%u %[1]s/passwd
}
userdb {
  driver = static
  args = uid=%[6]d gid=%[7]d home=%[1]s/home/%%u
}
mail_location = maildir:~/Maildir
service imap-login {
  inet_listener imap {
    address = 127.0.0.1
    port = %[2]s
  }
  inet_listener imaps {
    port = 0
  }
}
service stats {
  unix_listener stats-reader {
    mode = 0600
  }
  unix_listener stats-writer {
    mode = 0600
  }
}
`, dir, port, internalUser.Username, group(internalUser), loginUser.Username, uid, gid)
	cfg := filepath.Join(dir, "dovecot.conf")
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-F", "-c", cfg)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start dovecot: %v", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		if greeted(s.Addr) {
			return s
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "dovecot.log"))
			t.Fatalf("dovecot exited at start:\n%s", log)
		default:
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "dovecot.log"))
			t.Fatalf("dovecot did not answer on %s in 15 s:\n%s", s.Addr, log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// greeted reports whether an IMAP server greets on addr.
func greeted(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.HasPrefix(line, "* OK")
}

// Log is the server's log so far (for failure messages).
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "dovecot.log"))
	return string(b)
}
