#!/usr/bin/env bash
# Proves packages where they will run: for each .deb, a root of its suite and
# architecture (scripts/roots.sh: mmdebstrap --variant=apt with systemd and
# procps, cached; each run works on a throw-away overlay), `apt-get install
# ./x.deb` there, which resolves the Depends from Debian's archive, then the
# installed host started as the user agenthost against the simulator on
# 127.0.0.1 outside: it registers and answers calls to its bundled plugins
# (test/system TestInstalledPackage). arm64 and armhf roots run under
# qemu-user-static through binfmt_misc, mounted and enabled here. Needs root.
#
#   scripts/test-install.sh                          # builds all six (scripts/package.sh) and proves each
#   scripts/test-install.sh dist/agenthost_*.deb     # these packages (suite from ~debNN, arch from the package)
# Env: KEEP=1 keeps the work folder; ALLOW_BLOCKED=1 passes when a root
# cannot be made because the mirror serves an index that does not match its
# Release file (the run says BLOCKED and apt's error); any other failure fails.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
t0=$SECONDS
[ "$(id -u)" -eq 0 ] || { echo "test-install: needs root (mmdebstrap, unshare, chroot)" >&2; exit 2; }
source scripts/env.sh
source scripts/roots.sh
scripts/install-cross-deps.sh

debs=("$@")
if ((${#debs[@]} == 0)); then
  list=$(mktemp)
  ALLOW_BLOCKED=1 scripts/package.sh > "$list"
  mapfile -t debs < "$list"; rm -f "$list"
fi

# Foreign architectures run through binfmt_misc; F (fix-binary) lets the
# interpreter work inside a chroot without a copy of qemu in it.
if [ ! -e /proc/sys/fs/binfmt_misc/register ]; then mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc; fi
for q in qemu-aarch64 qemu-arm; do
  [ "$(head -1 "/proc/sys/fs/binfmt_misc/$q" 2>/dev/null)" = enabled ] || update-binfmts --enable "$q"
done

work=$(mktemp -d /tmp/agenthost-install.XXXXXX)
holder_pid="" unshare_pid=""
stop_root() {
  if [ -n "$holder_pid" ]; then kill -KILL "$holder_pid" 2>/dev/null || true; fi
  if [ -n "$unshare_pid" ]; then wait "$unshare_pid" 2>/dev/null || true; fi
  holder_pid="" unshare_pid=""
}
declare -A result=()
order=()
cleanup() {
  local rc=$?
  stop_root
  echo "== results"
  for t in "${order[@]}"; do echo "  $t: ${result[$t]}"; done
  if [ "${KEEP:-}" = 1 ] || [ $rc -ne 0 ]; then echo "test-install: work folder kept: $work" >&2; else rm -rf "$work"; fi
  echo "test-install: $([ $rc -eq 0 ] && echo PASS || echo FAIL) in $((SECONDS - t0)) s" >&2
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# One test binary for every root.
go test -c -tags system -o "$work/system.test" ./test/system/

fail=0
for deb in "${debs[@]}"; do
  version=$(dpkg-deb -f "$deb" Version) arch=$(dpkg-deb -f "$deb" Architecture)
  case $version in *~deb12u*) suite=bookworm ;; *~deb13u*) suite=trixie ;; *) echo "test-install: $deb: no ~debNN suffix in $version" >&2; exit 2 ;; esac
  target=$suite/$arch; order+=("$target"); s=$SECONDS
  echo "== $target: $(basename "$deb")"
  if root=$(root_make "install-$suite-$arch" "$suite" "$arch" apt "systemd,procps" lists); then :; else
    rc=$?
    if ((rc == 3)) && [ "${ALLOW_BLOCKED:-}" = 1 ]; then result[$target]="BLOCKED by the mirror (see above)"; continue; fi
    result[$target]="FAIL (no root)"; exit 1
  fi
  w="$work/$suite-$arch"; mkdir -p "$w/upper/srv/agenthost-test" "$w/upper/etc" "$w/ovl" "$w/root"
  cp "$deb" "$w/upper/srv/agenthost-test/"
  cp /etc/resolv.conf "$w/upper/etc/resolv.conf"   # apt inside resolves the mirror's name
  cat > "$w/holder.sh" <<HOLD
set -e
mount --make-rprivate /
mount -t overlay overlay -o lowerdir=$root,upperdir=$w/upper,workdir=$w/ovl $w/root
R=$w/root
mount -t proc proc \$R/proc
mount -t sysfs -o ro sysfs \$R/sys
mount --rbind /dev \$R/dev
mount -t tmpfs tmpfs \$R/run
mount -t tmpfs tmpfs \$R/tmp
exec chroot \$R sleep infinity
HOLD
  unshare -p -f -m -u -i bash "$w/holder.sh" > "$w/holder.log" 2>&1 &
  unshare_pid=$!
  for _ in $(seq 100); do holder_pid=$(pgrep -P "$unshare_pid" || true); [ -n "$holder_pid" ] && break; sleep 0.1; done
  [ -n "$holder_pid" ] || { cat "$w/holder.log" >&2; exit 1; }
  # Only once the holder is chrooted does nsenter -r enter the root (before
  # that, its root is the machine's).
  for _ in $(seq 300); do [ "$(readlink "/proc/$holder_pid/root")" = "$w/root" ] && break; sleep 0.1; done
  [ "$(readlink "/proc/$holder_pid/root")" = "$w/root" ] || { echo "test-install: the holder did not enter $w/root" >&2; cat "$w/holder.log" >&2; exit 1; }
  if INSTALL_TEST_PID=$holder_pid INSTALL_TEST_ROOT="$w/root" INSTALL_TEST_TARGET="$target" \
     INSTALL_TEST_DEB="/srv/agenthost-test/$(basename "$deb")" \
     "$work/system.test" -test.run '^TestInstalledPackage$' -test.v -test.count=1 -test.timeout 20m 2>&1 | tee "$w/go-test.log"
     [ "${PIPESTATUS[0]}" -eq 0 ]; then
    result[$target]="PASS ($((SECONDS - s)) s)"
  else
    result[$target]="FAIL ($((SECONDS - s)) s; log $w/go-test.log)"; fail=1
  fi
  stop_root
done
((fail == 0))
