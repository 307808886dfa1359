// Package framework is the syncer's small controller framework: the typed key every queue uses, a
// named rate-limited queue whose workers own retries, and cache helpers. The downsync, status and
// upsync controllers are built on it.
package framework
