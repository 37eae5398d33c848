#!/usr/bin/env bash
# The packages, proven under a real systemd: builds the three .deb files
# (scripts/package.sh), runs lintian on each, runs the arm64 and armhf binaries
# under qemu-user, then boots systemd 252 as PID 1 of its own PID and mount
# namespaces, chrooted into a Debian bookworm root, installs the amd64 package
# there with dpkg -i and runs the checks of test/system (go test -tags system)
# against the running systemd, with the simulated voice server on 127.0.0.1
# outside (the network namespace is shared). Needs root.
#
# The bookworm root (debootstrap --variant=minbase with systemd, dbus and the
# package's Depends) is cached in ${XDG_CACHE_HOME:-$HOME/.cache}/agenthost/
# and rebuilt when missing or when the Depends change; each run boots a
# throw-away overlay on top of it, so the cache stays pristine.
# Usage: scripts/test-system.sh [go test flags, e.g. -run 'TestSystem/watchdog']
# Env: KEEP=1 leaves the work folder (journal, logs) in place.
# One check can be left out with go test's -skip, e.g.
# `scripts/test-system.sh -skip 'TestSystem/reload'`.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
t0=$SECONDS
section() { echo "== $* (at $((SECONDS - t0)) s)"; }
[ "$(id -u)" -eq 0 ] || { echo "test-system: needs root (debootstrap, unshare, chroot)" >&2; exit 2; }
source scripts/env.sh
scripts/install-cross-deps.sh

section "packages"
mapfile -t debs < <(OUT=dist scripts/package.sh amd64 arm64 armhf)
deb_amd64=${debs[0]}
echo "${debs[@]}"

work=$(mktemp -d /tmp/agenthost-system.XXXXXX)
sysd_pid="" unshare_pid=""
cleanup() {
  local rc=$?
  if [ -n "$sysd_pid" ] && kill -0 "$sysd_pid" 2>/dev/null; then
    echo "== powering off the test systemd (pid $sysd_pid)"
    kill -s SIGRTMIN+4 "$sysd_pid" 2>/dev/null || true
    for _ in $(seq 60); do kill -0 "$unshare_pid" 2>/dev/null || break; sleep 0.5; done
    if kill -0 "$sysd_pid" 2>/dev/null; then kill -KILL "$sysd_pid" 2>/dev/null || true; fi
  fi
  [ -n "$unshare_pid" ] && wait "$unshare_pid" 2>/dev/null || true
  if [ "${KEEP:-}" = 1 ] || [ $rc -ne 0 ]; then echo "test-system: work folder kept: $work" >&2; else rm -rf "$work"; fi
  echo "test-system: $([ $rc -eq 0 ] && echo PASS || echo FAIL) in $((SECONDS - t0)) s" >&2
}
trap cleanup EXIT
trap 'exit 130' INT TERM

section "lintian (fails on any error or warning not in packaging/lintian-overrides, where each says why)"
lint_pids=()
for d in "${debs[@]}"; do
  lintian --fail-on error,warning --no-tag-display-limit "$d" > "$work/lintian.$(basename "$d").log" 2>&1 &
  lint_pids+=($!)
done

section "arm64 and armhf binaries under qemu-user"
for d in "${debs[@]:1}"; do
  arch=$(dpkg-deb -f "$d" Architecture); x="$work/x-$arch"; mkdir -p "$x"; dpkg-deb -x "$d" "$x"
  case $arch in arm64) q=qemu-aarch64;; armhf) q=qemu-arm;; esac
  "$q" "$x/usr/bin/agenthost" version
  "$q" "$x/usr/bin/agenthost" check --offline --config "$x/etc/agenthost/agenthost.yaml" > "$work/check-$arch.log"
  echo "$arch: agenthost check --offline: ok"
  for p in "$x"/usr/lib/agenthost/plugins/*; do   # a plugin started by hand says what it offers and exits 1
    out=$("$q" "$p" 2>&1 || true)
    grep -q ' offers: ' <<<"$out" || { echo "$arch plugin $(basename "$p") under qemu: $out" >&2; exit 1; }
    echo "$arch: $(grep ' offers: ' <<<"$out")"
  done
done

section "the bookworm root"
include="systemd,systemd-sysv,dbus,procps,libpam-systemd"   # libpam-systemd: user managers (the user unit)
for dep in $(dpkg-deb -f "$deb_amd64" Depends | sed 's/([^)]*)//g; s/|[^,]*//g; s/[[:space:]]//g; s/,/ /g'); do include+=",$dep"; done
cache="${XDG_CACHE_HOME:-$HOME/.cache}/agenthost/system-root"
root="$cache/bookworm-$(printf '%s' "$include" | sha256sum | cut -c1-12)"
if [ ! -e "$root/.complete" ]; then
  echo "building $root (debootstrap --variant=minbase --include=$include)"
  mkdir -p "$cache"; rm -rf "$root.tmp"
  s=$SECONDS
  debootstrap --variant=minbase --include="$include" bookworm "$root.tmp" http://deb.debian.org/debian > "$work/debootstrap.log" 2>&1 ||
    { tail -20 "$work/debootstrap.log" >&2; exit 1; }
  rm -rf "$root"; mv "$root.tmp" "$root"; touch "$root/.complete"
  echo "root built in $((SECONDS - s)) s"
else
  echo "reusing $root"
fi

section "booting systemd as PID 1 (overlay on the cached root)"
mkdir -p "$work/upper/srv/agenthost-test" "$work/ovl-work" "$work/root"
cp "$deb_amd64" "$work/upper/srv/agenthost-test/agenthost_amd64.deb"
# The previous package version for the upgrade check: the same package, repacked with a lower version.
prev="$work/prev"; dpkg-deb -R "$deb_amd64" "$prev"
sed -i "s/^Version: .*/Version: 0.0.0~previous-1/" "$prev/DEBIAN/control"
dpkg-deb -b --root-owner-group "$prev" "$work/upper/srv/agenthost-test/agenthost_previous_amd64.deb" >/dev/null
# scripts/install.sh with what it needs, and the binaries it takes (--from).
src="$work/upper/srv/agenthost-test/src"; mkdir -p "$src/scripts" "$src/packaging"
cp scripts/install.sh scripts/render-config.sh "$src/scripts/"; cp -r systemd "$src/"; cp packaging/sysusers.conf "$src/packaging/"; cp agenthost.example.yaml "$src/"
mkdir -p "$work/upper/srv/agenthost-test/from"; cp -r bin/package/amd64/agenthost bin/package/amd64/plugins "$work/upper/srv/agenthost-test/from/"
cat > "$work/boot.sh" <<BOOT
set -e
mount --make-rprivate /
mount -t overlay overlay -o lowerdir=$root,upperdir=$work/upper,workdir=$work/ovl-work $work/root
R=$work/root
mount -t proc proc \$R/proc
mount -t sysfs -o ro sysfs \$R/sys
mount --rbind /sys/fs/cgroup \$R/sys/fs/cgroup
mount -t tmpfs tmpfs \$R/run
mount -t tmpfs tmpfs \$R/tmp
mount --rbind /dev \$R/dev
# systemd makes / shared only when it is not in a container; services' private
# mounts (credentials, PrivateTmp …) reach the manager only through a shared root.
mount --make-rshared \$R
export container=other
exec chroot \$R /lib/systemd/systemd --system --log-target=journal --show-status=no
BOOT
unshare -p -f -m -u -i bash "$work/boot.sh" > "$work/console.log" 2>&1 &
unshare_pid=$!
for _ in $(seq 50); do sysd_pid=$(pgrep -P "$unshare_pid" || true); [ -n "$sysd_pid" ] && break; sleep 0.1; done
[ -n "$sysd_pid" ] || { cat "$work/console.log" >&2; exit 1; }
for _ in $(seq 120); do
  state=$(nsenter -t "$sysd_pid" -m -p -r -w systemctl is-system-running 2>/dev/null || true)
  case $state in running|degraded) break;; esac
  sleep 0.25
done
echo "systemd pid $sysd_pid (outside): $state"

section "lintian results"
lint_fail=0
for i in "${!debs[@]}"; do
  log="$work/lintian.$(basename "${debs[$i]}").log"
  if wait "${lint_pids[$i]}"; then r=clean; else r=FAILED; lint_fail=1; fi
  echo "$(basename "${debs[$i]}"): $r $(grep -E '^[EW]:' "$log" | tr '\n' ' ')"
done
((lint_fail == 0)) || exit 1

section "checks against the running systemd (test/system)"
SYSTEM_TEST_PID=$sysd_pid SYSTEM_TEST_ROOT="$work/root" SYSTEM_TEST_REPO="$repo" \
SYSTEM_TEST_DEB=/srv/agenthost-test/agenthost_amd64.deb SYSTEM_TEST_DEB_PREV=/srv/agenthost-test/agenthost_previous_amd64.deb \
  go test -tags system -count=1 -timeout 15m -v "$@" ./test/system/ 2>&1 | tee "$work/go-test.log"
