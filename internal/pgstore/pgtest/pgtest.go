// Package pgtest starts a throwaway PostgreSQL cluster for a test: initdb into
// a temporary directory, pg_ctl start on a free loopback port with its socket in
// that directory, one database created, everything stopped and removed at the
// test's cleanup. It uses the server binaries of Debian's postgresql package
// (found by pg_config --bindir, /usr/lib/postgresql/*/bin or PATH); without them
// the test is skipped saying so, or fails under CI=true, where .ci/run installs
// them.
//
// initdb and the server refuse to run as root; run as root (as CI and this
// project's machines do), the cluster runs as the unprivileged user "nobody"
// (uid and gid 65534), with its directory owned by that user.
package pgtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// nobody is the uid and gid the cluster runs as when the test runs as root.
const nobody = 65534

// BinDir returns the directory holding initdb and pg_ctl, or "" and what was
// looked for.
func BinDir() (string, string) {
	var tried []string
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dir := strings.TrimSpace(string(out))
		if hasServer(dir) {
			return dir, ""
		}
		tried = append(tried, dir+" (pg_config --bindir)")
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if hasServer(d) {
			return d, ""
		}
	}
	tried = append(tried, "/usr/lib/postgresql/*/bin")
	if p, err := exec.LookPath("initdb"); err == nil && hasServer(filepath.Dir(p)) {
		return filepath.Dir(p), ""
	}
	tried = append(tried, "initdb and pg_ctl on PATH")
	return "", "PostgreSQL server binaries (initdb, pg_ctl; Debian package postgresql) not found in " + strings.Join(tried, ", ")
}

func version(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

func hasServer(dir string) bool {
	for _, b := range []string{"initdb", "pg_ctl", "postgres"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return false
		}
	}
	return true
}

// Cluster is a running test cluster.
type Cluster struct {
	Dir  string // the cluster's directory (data, socket, log)
	Port int
	bin  string
	root bool
}

// Start starts a cluster for t, stopped and removed at t's cleanup. Without
// PostgreSQL the test is skipped (failed under CI=true).
func Start(t testing.TB) *Cluster {
	t.Helper()
	bin, missing := BinDir()
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s; .ci/run installs it", missing)
		}
		t.Skipf("%s: the PostgreSQL backend's tests need them", missing)
	}
	// Not t.TempDir(): its parents are private to root, and the server may run as
	// nobody, which must reach its own directory (as root: under /tmp, which
	// everyone may traverse, whatever TMPDIR says).
	parent := ""
	if os.Geteuid() == 0 {
		if fi, err := os.Stat("/tmp"); err == nil && fi.IsDir() {
			parent = "/tmp"
		}
	}
	dir, err := os.MkdirTemp(parent, "openhuman-pg-")
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{Dir: dir, bin: bin, root: os.Geteuid() == 0}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if c.root {
		if err := os.Chown(dir, nobody, nobody); err != nil {
			t.Fatalf("hand the cluster directory to nobody: %v", err)
		}
	}
	data := filepath.Join(dir, "data")
	if out, err := c.run("initdb", "-D", data, "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync"); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	c.start(t)
	return c
}

// start starts the server of c's data directory on a free loopback port, and
// stops it at t's cleanup.
func (c *Cluster) start(t testing.TB) {
	t.Helper()
	data := filepath.Join(c.Dir, "data")
	for attempt := 0; ; attempt++ {
		c.Port = freePort(t)
		opts := fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -c unix_socket_directories=%s -c fsync=off -c synchronous_commit=off -c full_page_writes=off", c.Port, c.Dir)
		out, err := c.run("pg_ctl", "start", "-w", "-t", "60", "-D", data, "-l", filepath.Join(c.Dir, "server.log"), "-o", opts)
		if err == nil {
			break
		}
		if attempt == 2 {
			log, _ := os.ReadFile(filepath.Join(c.Dir, "server.log"))
			t.Fatalf("pg_ctl start: %v\n%s\n%s", err, out, log)
		}
	}
	t.Cleanup(func() { c.Stop(t) })
}

// Stop stops the server now (immediate shutdown); stopping a stopped server
// does nothing.
func (c *Cluster) Stop(t testing.TB) {
	data := filepath.Join(c.Dir, "data")
	if out, err := c.run("pg_ctl", "status", "-D", data); err != nil {
		return // not running
	} else if !strings.Contains(string(out), "server is running") {
		return
	}
	if out, err := c.run("pg_ctl", "stop", "-m", "immediate", "-w", "-D", data); err != nil {
		t.Logf("pg_ctl stop: %v\n%s", err, out)
	}
}

// Standby starts a hot standby of c streaming from it: pg_basebackup -R (a
// base backup that starts as a standby, with the primary's connection
// written for it) into a new directory, started on its own loopback port.
// It is read-only and replays what the primary writes, a moment later.
func (c *Cluster) Standby(t testing.TB) *Cluster {
	t.Helper()
	parent := filepath.Dir(c.Dir)
	dir, err := os.MkdirTemp(parent, "openhuman-pg-standby-")
	if err != nil {
		t.Fatal(err)
	}
	s := &Cluster{Dir: dir, bin: c.bin, root: c.root}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if s.root {
		if err := os.Chown(dir, nobody, nobody); err != nil {
			t.Fatalf("hand the standby's directory to nobody: %v", err)
		}
	}
	if out, err := s.run("pg_basebackup", "-D", filepath.Join(dir, "data"), "-R", "-X", "stream", "-h", "127.0.0.1", "-p", strconv.Itoa(c.Port), "-U", "postgres", "--no-sync", "--checkpoint=fast"); err != nil {
		t.Fatalf("pg_basebackup -R from the primary: %v\n%s", err, out)
	}
	s.start(t)
	return s
}

// run runs one of the server's programs, as nobody when the test runs as root.
func (c *Cluster) run(name string, args ...string) ([]byte, error) {
	cmd := exec.Command(filepath.Join(c.bin, name), args...)
	cmd.Dir = c.Dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if c.root {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	}
	return cmd.CombinedOutput()
}

// URL returns the URL of database db on the cluster.
func (c *Cluster) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.Port, db)
}

// Database creates a new database on the cluster and returns its URL.
func (c *Cluster) Database(t testing.TB, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatalf("connect to the test cluster: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	return c.URL(name)
}

// freePort returns a loopback port free a moment ago.
func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
