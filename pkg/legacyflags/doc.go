// Package legacyflags keeps release-0.14 command lines working: the klog flags its syncer and
// syncer-gen took (through Go's flag package), which component-base no longer registers. Each is
// accepted and does what it did, with a deprecation warning naming what to use instead, or, when this
// syncer cannot do it (writing logs to files), fails with a message naming the replacement.
package legacyflags
