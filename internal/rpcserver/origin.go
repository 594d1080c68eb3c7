package rpcserver

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// checkHost refuses, with 403, a request whose Host header (or Origin header,
// when there is one) is not an address of this server: 127.0.0.1, localhost or
// [::1] on the port the request arrived on, the literal address it arrived on,
// or one of Options.AllowedHosts. A web page on another site that rebinds its
// name to 127.0.0.1 sends its own name in both, so it cannot read the answers
// (DNS-rebinding defence). Requests without Origin (curl, scripts) pass when the
// Host matches.
func (s *Server) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		allowed := s.allowedHosts(r)
		host := normalizeHostPort(r.Host, "80")
		if !allowed.allows(host) {
			s.log.Warn("refused a request for another host name (DNS-rebinding defence)", "host", r.Host, "path", r.URL.Path, "remote", r.RemoteAddr)
			writeJSON(w, http.StatusForbidden, map[string]any{"ok": false, "error": "forbidden_host",
				"message": fmt.Sprintf("Host %q is not an address of this server (%s): requests for other names are refused; "+
					"add the name to [server] allowed_hosts in config.toml to allow it", r.Host, allowed)})
			return
		}
		if origins, ok := r.Header["Origin"]; ok {
			origin := strings.Join(origins, ",")
			if !allowed.allows(originHostPort(origin)) {
				s.log.Warn("refused a request from a web page of another origin", "origin", origin, "path", r.URL.Path, "remote", r.RemoteAddr)
				writeJSON(w, http.StatusForbidden, map[string]any{"ok": false, "error": "forbidden_origin",
					"message": fmt.Sprintf("Origin %q is not this server (%s): requests from web pages of other sites are refused; "+
						"add the name to [server] allowed_hosts in config.toml to allow it", origin, allowed)})
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// hostSet is the set of normalised host:port a request may name.
type hostSet struct {
	exact map[string]bool
	// hosts match on any port: used when the port the request arrived on is
	// unknown (the handler served outside an http.Server).
	hosts map[string]bool
}

func (h hostSet) allows(hostport string) bool {
	if hostport == "" {
		return false
	}
	if h.exact[hostport] {
		return true
	}
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	return h.hosts[strings.Trim(host, "[]")]
}

// String lists the accepted addresses for an error message.
func (h hostSet) String() string {
	var names []string
	for k := range h.exact {
		names = append(names, k)
	}
	for k := range h.hosts {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// allowedHosts is what a request on r's connection may name.
func (s *Server) allowedHosts(r *http.Request) hostSet {
	set := hostSet{exact: map[string]bool{}, hosts: map[string]bool{}}
	port := ""
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if h, p, err := net.SplitHostPort(la.String()); err == nil {
			port = p
			set.exact[normalizeHostPort(net.JoinHostPort(h, p), "")] = true
		}
	}
	add := func(h string) {
		h = strings.TrimSpace(h)
		switch _, _, err := net.SplitHostPort(h); {
		case h == "":
		case err == nil:
			set.exact[normalizeHostPort(h, "")] = true
		case port == "":
			set.hosts[strings.ToLower(strings.Trim(h, "[]"))] = true
		default:
			set.exact[normalizeHostPort(net.JoinHostPort(strings.Trim(h, "[]"), port), "")] = true
		}
	}
	for _, h := range []string{"127.0.0.1", "localhost", "::1"} {
		add(h)
	}
	for _, h := range s.opts.AllowedHosts {
		add(h)
	}
	return set
}

// normalizeHostPort lowercases host:port and gives it defPort when it has none
// ("" leaves it as it is). IPv6 literals keep their brackets.
func normalizeHostPort(hp, defPort string) string {
	hp = strings.ToLower(strings.TrimSpace(hp))
	h, p, err := net.SplitHostPort(hp)
	if err != nil {
		h, p = strings.Trim(hp, "[]"), defPort
	}
	if ip := net.ParseIP(h); ip != nil {
		h = ip.String()
	}
	if p == "" {
		return h
	}
	if _, err := strconv.Atoi(p); err != nil {
		return ""
	}
	return net.JoinHostPort(h, p)
}

// originHostPort is the normalised host:port of an Origin header, or "" when it
// is not an http(s) origin ("null", a file: page, garbage).
func originHostPort(origin string) string {
	u, err := url.Parse(strings.TrimSpace(origin))
	if err != nil || u.Host == "" || u.Path != "" && u.Path != "/" {
		return ""
	}
	switch u.Scheme {
	case "http":
		return normalizeHostPort(u.Host, "80")
	case "https":
		return normalizeHostPort(u.Host, "443")
	}
	return ""
}
