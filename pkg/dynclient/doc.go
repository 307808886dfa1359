// Package dynclient is the dynamic client the syncer talks to both sides with (the edge only when it
// serves many workspaces: their upstream client is kcp-dev's): client-go's, with its watches and its
// creates decoding the apiserver's JSON in one pass. client-go decodes every watch event's JSON five
// times over (its frame, its kind, the event, the object's kind, the object) and a create's answer
// twice (its kind, the object); at a fill of 10,000 ConfigMaps that was a quarter of the syncer's
// CPU, taken from the apiservers it shares the machine with (docs/performance.md). What the client
// returns is what client-go's returns: unstructured objects (a Status typed, as client-go types it),
// the same errors (a connection dropped as a watch opens is an empty watch), the same requests (one
// HTTP client and rate limiter, which watches skip as client-go's do; the same request metrics), in
// JSON only. Everything else is client-go's own.
//
// It decodes JSON only; it must not decide anything about the objects it carries.
package dynclient
