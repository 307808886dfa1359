#!/usr/bin/env bash
# The Debian (bookworm) packages of the edge node that test/testenv runs (Options.Node, `make
# node-bins`), each version printed and checked against a minimum rather than pinned to a build that
# the next security update removes from the archive:
#
#   containerd, runc, containernetworking-plugins, busybox-static: downloaded (`apt-get download`, not
#     installed: apt starts no service) and extracted into $NODE_DIR (bin/, cni/, busybox). They need
#     only libc and libseccomp2, which apt itself depends on.
#   iptables, conntrack: installed with `apt-get install` where missing (no service either). They load
#     system libraries (libxtables, libnftnl, libnetfilter-conntrack, ...) and iptables its extensions
#     from a compiled-in path, and kube-proxy and the CNI plugins run them from PATH: an extracted copy
#     would need LD_LIBRARY_PATH and XTABLES_LIBDIR wrappers on every caller.
#
# A cached extraction whose versions still meet the minimums is kept; no network is needed then.
set -euo pipefail
: "${NODE_DIR:?NODE_DIR must name the cache folder (the Makefile sets it)}"
say() { echo "node-bins: $*"; }
# package minimum (a ~ sorts before anything: 1.6.20~ds1 counts as 1.6.20): containerd 1.6.20 serves CRI v1 (kubelet 1.35 needs it) and has
# netns_mounts_under_state_dir; the others are the bookworm builds the bed was tested with.
declare -A min=(
  [containerd]=1.6.20~ [runc]=1.1.5 [containernetworking-plugins]=1.1.1 [busybox-static]=1:1.35.0
  [iptables]=1.8.9 [conntrack]=1:1.4.7
)
extracted=(containerd runc containernetworking-plugins busybox-static)
installed=(iptables conntrack)
check() { # package version
  if ! dpkg --compare-versions "$2" ge "${min[$1]}"; then
    say "$1 $2 is older than the minimum ${min[$1]}" >&2
    return 1
  fi
}
apt_refreshed=false
refresh() { $apt_refreshed || { say "refreshing the Debian package lists"; apt-get update -qq; apt_refreshed=true; }; }

# 1. Tools from the system, installed where missing.
missing=()
for p in "${installed[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then # the node needs root anyway: a bed without one (-node=false) needs none of this
    say "${missing[*]} missing, and installing them needs root: no node here (apt-get install ${missing[*]} as root)" >&2
    exit 0
  fi
  say "installing ${missing[*]} (apt-get install)"
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
    refresh
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi
for p in "${installed[@]}"; do
  v=$(dpkg-query -W -f='${Version}' "$p")
  check "$p" "$v"
  say "$p $v (installed)"
done

# 2. The extracted packages, cached in $NODE_DIR with their versions in versions.txt.
versions=$NODE_DIR/versions.txt
cached=true
[ -f "$versions" ] || cached=false
for p in "${extracted[@]}"; do
  v=$(awk -v p="$p" '$1 == p { print $2 }' "$versions" 2>/dev/null || true)
  if [ -z "$v" ] || ! check "$p" "$v" 2>/dev/null; then cached=false; fi
done
for f in bin/containerd bin/containerd-shim-runc-v2 bin/ctr bin/runc cni/bridge cni/host-local cni/loopback cni/portmap busybox; do
  [ -x "$NODE_DIR/$f" ] || cached=false
done
if $cached; then
  while read -r p v; do say "$p $v (cached in $NODE_DIR)"; done < "$versions"
  exit 0
fi
command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || { say "apt-get and dpkg-deb are needed" >&2; exit 1; }
start=$(date +%s)
mkdir -p "$NODE_DIR"
tmp=$(mktemp -d "$NODE_DIR/.fetch-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
say "downloading ${extracted[*]} (apt-get download)"
# apt's sandbox user cannot write here: download as root, quietly.
if ! apt-get download -o APT::Sandbox::User=root "${extracted[@]}" >/dev/null 2>&1; then
  refresh
  apt-get download -o APT::Sandbox::User=root "${extracted[@]}" >/dev/null
fi
out=$tmp/out
mkdir -p "$out/bin" "$out/cni"
: > "$out/versions.txt"
for p in "${extracted[@]}"; do
  deb=$(ls "${p}"_*.deb)
  v=$(dpkg-deb -f "$deb" Version)
  check "$p" "$v"
  dpkg-deb -x "$deb" root
  echo "$p $v" >> "$out/versions.txt"
  say "$p $v"
done
install -m 0755 root/usr/bin/containerd root/usr/bin/containerd-shim-runc-v2 root/usr/bin/ctr root/usr/sbin/runc "$out/bin/"
install -m 0755 root/usr/lib/cni/bridge root/usr/lib/cni/host-local root/usr/lib/cni/loopback root/usr/lib/cni/portmap "$out/cni/"
install -m 0755 root/bin/busybox "$out/busybox"
# Swap the new files in; images/ (hack/build-node-images.sh) stays.
for f in bin cni busybox versions.txt; do
  rm -rf "${NODE_DIR:?}/$f"
  mv "$out/$f" "$NODE_DIR/$f"
done
say "extracted into $NODE_DIR in $(( $(date +%s) - start ))s"
