#!/usr/bin/env bash
# Checks the image's binary without a container engine: builds it exactly as hack/build-image.sh
# does (hack/build-static.sh), proves it is static (no ELF interpreter, no dynamic section) and that
# it runs on its own in an empty environment, as the image's entrypoint (--help on stdout, --version
# stamped with this checkout's revision). hack/image's test then inspects the image itself.
set -euo pipefail
cd "$(dirname "$0")/.."
fail() { echo "image-check: $*" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=$tmp/syncer
bash hack/build-static.sh "$out"
if readelf -l "$out" | grep -q INTERP || readelf -d "$out" 2>/dev/null | grep -q NEEDED; then
  fail "$out is not static"
fi
go version -m "$out" | grep -q 'CGO_ENABLED=0' || fail "built with cgo"
help=$(env -i "$out" --help 2>/dev/null) || fail "the static binary does not run in an empty environment"
[[ $help == *"--upstream-kubeconfig"* ]] || fail "--help does not print the flags on standard output"
line=$(env -i "$out" --version) || fail "--version failed"
[[ $line == "syncer "* ]] || fail "--version printed '$line'"
if rev=$(git rev-parse HEAD 2>/dev/null); then
  [[ $line == *"(revision $rev,"* ]] || fail "--version does not name this checkout's revision $rev: '$line'"
fi
echo "image-check: ok ($(du -h "$out" | cut -f1) static binary; $line)"
