// Package searxng gives a tool module a typed call to the web.searxng capability's
// host function searxng_search: the host builds and sends one GET to the operator's
// SearXNG instance and returns the raw body, which the module parses.
//
// Importing it links searxng_search, so a module that uses it must request
// capabilities = ["web.searxng"] in its manifest. The call exists only in wasip1
// builds.
package searxng
