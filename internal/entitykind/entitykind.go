// Package entitykind is the vocabulary of entity kinds: the kinds a store keeps
// (the extractor's) and what people call them, shared by the store, which
// extracts and filters by them, and the read API, which resolves a request's
// kind to a stored one.
package entitykind

import "slices"

// The stored kinds.
const (
	Email   = "email"
	URL     = "url"
	Handle  = "handle"
	Hashtag = "hashtag"
	Topic   = "topic"
	Person  = "person"
)

// Kinds are the stored kinds, sorted.
var Kinds = []string{Email, Handle, Hashtag, Person, Topic, URL}

// Aliases maps what people call a kind to the stored kind.
var Aliases = map[string]string{
	"people": Person, "persons": Person, "name": Person, "names": Person, "contact": Person, "contacts": Person,
	"emails": Email, "mail": Email, "address": Email, "addresses": Email, "e-mail": Email,
	"handles": Handle, "user": Handle, "users": Handle, "username": Handle,
	"hashtags": Hashtag, "tag": Hashtag, "tags": Hashtag,
	"topics": Topic, "subject": Topic, "subjects": Topic,
	"urls": URL, "link": URL, "links": URL,
}

// Known reports whether kind is a stored kind.
func Known(kind string) bool {
	_, ok := slices.BinarySearch(Kinds, kind)
	return ok
}
