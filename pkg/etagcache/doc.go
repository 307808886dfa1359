// Package etagcache revalidates discovery instead of fetching it again: a transport that keeps the
// last response to each GET of the aggregated discovery documents (/api, /apis, with a kcp
// /clusters/<name> prefix) with its ETag, asks with If-None-Match, and answers a 304 Not Modified
// with the kept response. The syncer re-reads discovery at every API change and every
// --discovery-refresh-period; on an idle link each re-read then costs a header instead of the
// document (tens of KiB per side). Servers that send no ETag are passed through unchanged.
package etagcache
