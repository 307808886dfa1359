#!/usr/bin/env bash
# Checks the image definition without a container engine: that the Dockerfile's Go is go.mod's,
# builds the binary exactly as the Dockerfile does, proves it is static (no ELF interpreter, no
# dynamic section) and runs on its own with the image's entrypoint (--help on stdout, --version
# stamped with this checkout's revision), and checks that the Dockerfile runs as the non-root user
# the Deployment requires.
set -euo pipefail
cd "$(dirname "$0")/.."
fail() { echo "image-check: $*" >&2; exit 1; }

# The build stage's Go must be go.mod's: the golang image sets GOTOOLCHAIN=local, so an older Go
# cannot build the module, and a newer one is not what the tests ran with. Same major.minor, and a
# patch pinned in the Dockerfile must not be older than go.mod's.
mod_go=$(awk '$1 == "go" { print $2; exit }' go.mod)
image_go=$(sed -nE 's#^FROM[[:space:]]+(docker\.io/)?(library/)?golang:([0-9]+\.[0-9]+(\.[0-9]+)?)([^0-9.].*)?$#\3#p' Dockerfile | head -n1)
minor() { echo "$1" | grep -oE '^[0-9]+\.[0-9]+' || true; }
patch() { echo "$1" | sed -nE 's/^[0-9]+\.[0-9]+\.([0-9]+).*/\1/p'; }
[ -n "$(minor "$mod_go")" ] || fail "no go line in go.mod"
[ -n "$image_go" ] || fail "no FROM golang:<version> (a version number, e.g. golang:$(minor "$mod_go")) in the Dockerfile"
if [ "$(minor "$image_go")" != "$(minor "$mod_go")" ] ||
   { [ -n "$(patch "$image_go")" ] && [ "$(patch "$image_go")" -lt "$(patch "$mod_go" | grep . || echo 0)" ]; }; then
  fail "the Dockerfile builds with golang:$image_go but go.mod says go $mod_go: make the Dockerfile's FROM golang:<version> match go.mod"
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=$tmp/syncer
bash hack/build-static.sh "$out"
if readelf -l "$out" | grep -q INTERP || readelf -d "$out" 2>/dev/null | grep -q NEEDED; then
  fail "$out is not static"
fi
go version -m "$out" | grep -q 'CGO_ENABLED=0' || fail "built with cgo"
grep -qx 'ENTRYPOINT \["/syncer"\]' Dockerfile || fail "the Dockerfile's ENTRYPOINT is not /syncer"
grep -qx 'USER 65532:65532' Dockerfile || fail "the Dockerfile does not run as 65532"
grep -q 'hack/build-static.sh' Dockerfile || fail "the Dockerfile does not build with hack/build-static.sh"
help=$(env -i "$out" --help 2>/dev/null) || fail "the static binary does not run in an empty environment"
[[ $help == *"--from-kubeconfig"* ]] || fail "--help does not print the flags on standard output"
line=$(env -i "$out" --version) || fail "--version failed"
[[ $line == "syncer "* ]] || fail "--version printed '$line'"
if rev=$(git rev-parse HEAD 2>/dev/null); then
  [[ $line == *"(revision $rev,"* ]] || fail "--version does not name this checkout's revision $rev: '$line'"
fi
echo "image-check: ok ($(du -h "$out" | cut -f1) static binary; Go $image_go as go.mod's $mod_go; entrypoint /syncer; user 65532; $line)"
