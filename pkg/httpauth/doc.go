// Package httpauth protects the syncer's metrics address the way kube-rbac-proxy and
// controller-runtime's secure metrics server do: over TLS, each request carries a bearer token that
// the edge apiserver authenticates (TokenReview) and authorizes for the request's path and verb
// (SubjectAccessReview on a non-resource URL, so RBAC's nonResourceURLs grant it: "/metrics",
// "/report", "/debug/pprof/*"). Decisions are cached for a short while, so a scrape every few
// seconds costs the apiserver two reviews a minute per scraper. The certificate is read from a
// directory (tls.crt, tls.key; read again when the files change, as cert-manager renews them) or
// generated, self-signed, at start.
//
// It decides nothing about what is served, only who may read it.
package httpauth
