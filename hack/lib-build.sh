# Sourced by hack/build-k8s-bins.sh and hack/build-kcp.sh: builds one binary from a tools module into
# a cache folder, once (a binary already there is kept), printing progress every 30 s so a cold build
# of several minutes does not look hung.
#   build_bin LABEL TOOLS_DIR OUT_DIR NAME PACKAGE LDFLAGS
build_bin() {
  local label=$1 tools=$2 out=$3 name=$4 pkg=$5 ldflags=$6 start ticker
  if [ -x "$out/$name" ]; then echo "$label: $name is cached in $out"; return; fi
  start=$(date +%s)
  echo "$label: building $name from $pkg (cold: minutes; a progress line follows every 30s)"
  ( while sleep 30; do echo "$label: ... still building $name ($(( $(date +%s) - start ))s)"; done ) &
  ticker=$!
  # No RETURN trap: it would stay set after this function and fire, with $ticker out of scope, when
  # the caller returns (that broke every cold build after the first binary).
  if ! go build -C "$tools" -trimpath -ldflags "$ldflags" -o "$out/$name.tmp" "$pkg"; then
    kill "$ticker" 2>/dev/null || true
    return 1
  fi
  kill "$ticker" 2>/dev/null || true
  mv "$out/$name.tmp" "$out/$name"
  echo "$label: built $name in $(( $(date +%s) - start ))s"
}
