package main

import (
	"cmp"
	"net/http"
	"time"

	"github.com/hookinbox/hookinbox/cmd/hookinbox/internal/probe"
	"github.com/hookinbox/hookinbox/internal/sign"
)

// signedHeaders returns the headers of ev signed now for url, with a JSON content
// type unless the signer sets another.
func signedHeaders(url string, signer sign.Signer, ev outgoing) (http.Header, error) {
	return probe.SignedHeaders(url, signer, ev.body, ev.id, cmp.Or(ev.signType, ev.typ), time.Now())
}
