#!/usr/bin/env bash
# The packages, proven where they run: builds the six .deb files once
# (scripts/package.sh: bookworm and trixie × amd64, arm64, armhf), runs each
# suite's lintian on each (scripts/lint.sh), runs the foreign binaries under
# qemu-user, installs packages with apt in roots of their own suite and
# architecture and has their host serve plugin calls there
# (scripts/test-install.sh), then, for bookworm (systemd 252) and trixie
# (systemd 257), boots systemd as PID 1 of its own PID and mount namespaces,
# chrooted into a Debian root of that suite, and runs the checks of
# test/system against it: TestSystem (install, upgrade, the sandbox, reload,
# watchdog, stop, purge, install.sh, the user unit), TestAptRepository (a
# signed repository of both suites: install, upgrade, tampering refused),
# TestMediaFromThePackage (the media plugin plays an MP3 from a local HTTP
# server into the file sink, decoded by the ffmpeg the package Recommends),
# TestChildrenFromThePackage (an attacker's plugin and MCP stdio server under
# the installed service: the token, config and state out of their reach) and,
# on trixie, TestDesktop (the user unit playing into and recording from a
# real PipeWire) and TestWakeWordFromThePackage (fetch-wakeword, check and
# a wake-word turn from the hardened service). The simulated voice server runs on 127.0.0.1 outside (the
# network namespace is shared). Needs root.
#
# The roots are made by mmdebstrap (scripts/roots.sh), cached in
# ${XDG_CACHE_HOME:-$HOME/.cache}/agenthost/roots and remade when missing or
# when their package list changes; each run boots a throw-away overlay on
# top, so the cache stays pristine.
#
# Which packages are proven with apt in a foreign root (each takes minutes
# under qemu, and making its root several more on a fresh machine):
# INSTALL_TARGETS, default "trixie/armhf trixie/arm64", which with the two
# amd64 systemd roots covers each suite and each architecture; while the
# mirror blocks trixie/armhf, bookworm/armhf stands in for it, so armhf is
# still proven (a broken -updates index alone does not block: see
# scripts/roots.sh). INSTALL_TARGETS=all proves all six (bookworm/arm64,
# bookworm/armhf and both amd64 as well); INSTALL_TARGETS=none none.
# When the Debian mirror serves an index that does not match its Release file
# (seen for trixie armhf), what needs it is reported BLOCKED with apt's error
# and the rest goes on; STRICT=1 fails instead.
# Usage: scripts/test-system.sh [flags for the test binary, given to each of its runs,
#        e.g. -test.skip 'TestSystem/reload|TestDesktop' to leave checks out]
# Env: KEEP=1 leaves the work folder (journal, logs) in place; SUITES (default
# "bookworm trixie") the systemd roots to boot; PACKAGES (default all six) the
# scripts/package.sh targets to build, e.g. "trixie/amd64" (each booted suite
# needs its amd64 one); TESTS (default all) the checks of test/system to run
# in each booted root, e.g. "TestChildrenFromThePackage".
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
t0=$SECONDS
section() { echo "== $* (at $((SECONDS - t0)) s)"; }
[ "$(id -u)" -eq 0 ] || { echo "test-system: needs root (mmdebstrap, unshare, chroot)" >&2; exit 2; }
source scripts/env.sh
source scripts/roots.sh
scripts/install-cross-deps.sh
allow_blocked=1; [ "${STRICT:-}" = 1 ] && allow_blocked=""
SUITES=(${SUITES:-bookworm trixie})

work=$(mktemp -d /tmp/agenthost-system.XXXXXX)
declare -A times=() deb=()
summary=()
sysd_pid="" unshare_pid=""
poweroff() {
  if [ -n "$sysd_pid" ] && kill -0 "$sysd_pid" 2>/dev/null; then
    echo "== powering off the test systemd (pid $sysd_pid)"
    kill -s SIGRTMIN+4 "$sysd_pid" 2>/dev/null || true
    for _ in $(seq 60); do kill -0 "$unshare_pid" 2>/dev/null || break; sleep 0.5; done
    if kill -0 "$sysd_pid" 2>/dev/null; then kill -KILL "$sysd_pid" 2>/dev/null || true; fi
  fi
  [ -n "$unshare_pid" ] && wait "$unshare_pid" 2>/dev/null || true
  sysd_pid="" unshare_pid=""
}
cleanup() {
  local rc=$?
  poweroff
  [ -n "${lint_pid:-}" ] && kill "$lint_pid" 2>/dev/null || true
  echo "== summary"
  for l in "${summary[@]}"; do echo "  $l"; done
  if [ "${KEEP:-}" = 1 ] || [ $rc -ne 0 ]; then echo "test-system: work folder kept: $work" >&2; else rm -rf "$work"; fi
  echo "test-system: $([ $rc -eq 0 ] && echo PASS || echo FAIL) in $((SECONDS - t0)) s" >&2
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# scripts/test.sh runs this in a session of its own and ends it by its ID.
[ -z "${SESSION_FILE:-}" ] || echo "$$" > "$SESSION_FILE"

safe_rm "${XDG_CACHE_HOME:-$HOME/.cache}/agenthost/system-root" || true   # the debootstrap root of earlier versions

# without_updates LOG: a summary line for each root that went without -updates.
without_updates() {
  local l
  while read -r l; do summary+=("${l#roots: }"); done \
    < <(grep -hE '^roots: .*(goes without -updates|making it from .* alone)' "$1" | sed 's/[;:]$//' | sort -u)
}

section "packages (scripts/package.sh: six, each built once for the whole run)"
s=$SECONDS
ALLOW_BLOCKED=$allow_blocked scripts/package.sh ${PACKAGES:-} 2> >(tee "$work/package.log" >&2) > "$work/debs"
mapfile -t debs < "$work/debs"
for d in "${debs[@]}"; do
  v=$(dpkg-deb -f "$d" Version) a=$(dpkg-deb -f "$d" Architecture)
  case $v in *~deb12u*) deb[bookworm/$a]=$d ;; *~deb13u*) deb[trixie/$a]=$d ;; esac
done
summary+=("packages: ${#debs[@]} built in $((SECONDS - s)) s: $(printf '%s ' "${!deb[@]}")")
if grep -q BLOCKED "$work/package.log"; then
  summary+=("packages BLOCKED by the mirror: $(sed -n 's/^package: BLOCKED by the Debian mirror (see above): //p' "$work/package.log")")
  summary+=("$(grep -A3 'BLOCKED by the mirror' "$work/package.log" | grep -E 'E: |unexpected size|Hash Sum' | sort -u | head -3 | tr '\n' ' ')")
fi
without_updates "$work/package.log"
for d in "${debs[@]}"; do echo "$d: Depends: $(dpkg-deb -f "$d" Depends)"; done

section "lintian, each suite's own (in the background)"
scripts/lint.sh "${debs[@]}" > "$work/lint.log" 2>&1 &
lint_pid=$!

section "the foreign binaries under qemu-user"
for d in "${debs[@]}"; do
  arch=$(dpkg-deb -f "$d" Architecture); [ "$arch" = amd64 ] && continue
  x="$work/x-$(basename "$d" .deb)"; mkdir -p "$x"; dpkg-deb -x "$d" "$x"
  case $arch in arm64) q=qemu-aarch64;; armhf) q=qemu-arm;; esac
  # The binaries are linked against their suite's glibc: run them with that
  # suite's libraries when this machine has older ones (trixie's on bookworm).
  v=$(dpkg-deb -f "$d" Version)
  if [[ $v == *~deb13u* ]] && [ "$(host_suite)" = bookworm ]; then
    echo "$(basename "$d"): linked against trixie's glibc; run in its root by test-install"
    continue
  fi
  "$q" "$x/usr/bin/agenthost" version
  "$q" "$x/usr/bin/agenthost" check --offline --config "$x/etc/agenthost/agenthost.yaml" > "$work/check-$arch.log"
  echo "$arch: agenthost check --offline: ok"
  for p in "$x"/usr/lib/agenthost/plugins/*; do   # a plugin started by hand says what it offers and exits 1
    out=$("$q" "$p" 2>&1 || true)
    grep -q ' offers: ' <<<"$out" || { echo "$arch plugin $(basename "$p") under qemu: $out" >&2; exit 1; }
    echo "$arch: $(grep ' offers: ' <<<"$out")"
  done
done

fail=0
section "apt install in roots of the package's own suite and architecture (scripts/test-install.sh)"
targets=(${INSTALL_TARGETS:-trixie/armhf trixie/arm64})
if [ -z "${INSTALL_TARGETS:-}" ] && [ -z "${deb[trixie/armhf]:-}" ]; then
  targets+=(bookworm/armhf)   # armhf proven on bookworm while trixie's armhf index is blocked
fi
[ "${targets[*]}" = all ] && targets=(bookworm/amd64 bookworm/arm64 bookworm/armhf trixie/amd64 trixie/arm64 trixie/armhf)
[ "${targets[*]}" = none ] && targets=()
inst=()
for t in "${targets[@]}"; do
  if [ -n "${deb[$t]:-}" ]; then inst+=("${deb[$t]}"); else summary+=("install $t: BLOCKED (no package: see packages)"); fi
done
s=$SECONDS
if ((${#inst[@]})); then
  set +e; ALLOW_BLOCKED=$allow_blocked KEEP=${KEEP:-} scripts/test-install.sh "${inst[@]}" 2>&1 | tee "$work/install.log"
  rc=${PIPESTATUS[0]}; set -e
  summary+=("install proofs $([ "$rc" -eq 0 ] && echo PASS || echo FAIL) in $((SECONDS - s)) s:$(sed -n '/^== results/,/^test-install:/p' "$work/install.log" | sed '1d;$d' | tr '\n' ';')")
  without_updates "$work/install.log"
  [ "$rc" -eq 0 ] || fail=1
fi

go test -c -tags system -o "$work/system.test" ./test/system/
# The wake word's tarballs (models, npm's ONNX Runtime), pinned, fetched once.
packs=$(scripts/fetch-wakeword.sh --pack "${XDG_CACHE_HOME:-$HOME/.cache}/agenthost/wakeword-packs")

# boot ROOT NAME: boots systemd in an overlay on ROOT; sets sysd_pid and merged.
boot() {
  local root=$1 name=$2 w="$work/$2"
  mkdir -p "$w/upper/srv/agenthost-test" "$w/ovl-work" "$w/root"
  merged="$w/root"
  cat > "$w/boot.sh" <<BOOT
set -e
mount --make-rprivate /
mount -t overlay overlay -o lowerdir=$root,upperdir=$w/upper,workdir=$w/ovl-work $w/root
R=$w/root
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
  unshare -p -f -m -u -i bash "$w/boot.sh" > "$w/console.log" 2>&1 &
  unshare_pid=$!
  for _ in $(seq 50); do sysd_pid=$(pgrep -P "$unshare_pid" || true); [ -n "$sysd_pid" ] && break; sleep 0.1; done
  [ -n "$sysd_pid" ] || { cat "$w/console.log" >&2; exit 1; }
  local state=""
  for _ in $(seq 240); do
    state=$(nsenter -t "$sysd_pid" -m -p -r -w systemctl is-system-running 2>/dev/null || true)
    case $state in running|degraded) break;; esac
    sleep 0.25
  done
  echo "systemd $(nsenter -t "$sysd_pid" -m -p -r -w systemctl --version | head -1 | cut -d' ' -f2) pid $sysd_pid (outside): $state"
}

# run_tests NAME REGEXP [go test flags]: one test of test/system against the booted root.
run_tests() {
  local name=$1 re=$2; shift 2
  [ -z "${TESTS:-}" ] || [[ " $TESTS " == *" ${name#*-} "* ]] || return 0
  local s=$SECONDS rc=0
  set +e
  "$work/system.test" -test.run "$re" -test.v -test.count=1 -test.timeout 20m "$@" 2>&1 | tee "$work/$name.log"
  rc=${PIPESTATUS[0]}; set -e
  summary+=("$name: $([ "$rc" -eq 0 ] && echo PASS || echo FAIL) in $((SECONDS - s)) s")
  return "$rc"
}

for suite in "${SUITES[@]}"; do
  d=${deb[$suite/amd64]:-}
  [ -n "$d" ] || { echo "test-system: no $suite amd64 package" >&2; exit 1; }
  section "the $suite root with systemd"
  include="systemd,systemd-sysv,dbus,procps,libpam-systemd"   # libpam-systemd: user managers (the user unit)
  [ "$suite" = trixie ] && include+=",pipewire,pipewire-bin,pipewire-alsa,wireplumber,dbus-user-session,alsa-utils,libonnxruntime1.21"
  # The package's Depends and Recommends, as `apt install` brings them (ffmpeg: the media plugin's decoder).
  for dep in $({ dpkg-deb -f "$d" Depends; dpkg-deb -f "$d" Recommends; } | sed 's/([^)]*)//g; s/|[^,]*//g; s/[[:space:]]//g; s/,/ /g'); do include+=",$dep"; done
  root=$(root_make "system-$suite" "$suite" amd64 minbase "$include")

  section "booting systemd as PID 1 in the $suite root (overlay on the cached root)"
  boot "$root" "system-$suite"
  srv="$work/system-$suite/upper/srv/agenthost-test"
  cp "$d" "$srv/agenthost_amd64.deb"
  # The previous package version for the upgrade checks: the same package, repacked with a lower version.
  n=$(suite_number "$suite")
  prev="$work/prev-$suite"; dpkg-deb -R "$d" "$prev"
  sed -i "s/^Version: .*/Version: 0.0.0~previous-1~deb${n}u1/" "$prev/DEBIAN/control"
  if [ -e "$prev/usr/lib/systemd/system/agenthost.service" ]; then
    # trixie: the previous version has bookworm's layout (/lib/systemd/system), so the
    # upgrade moves the unit between the two names of one folder, as bookworm→trixie does.
    mkdir -p "$prev/lib/systemd/system"; mv "$prev/usr/lib/systemd/system/agenthost.service" "$prev/lib/systemd/system/"
    rmdir "$prev/usr/lib/systemd/system"
    sed -i 's| usr/lib/systemd/system/agenthost.service$| lib/systemd/system/agenthost.service|' "$prev/DEBIAN/md5sums"
  fi
  dpkg-deb -b --root-owner-group "$prev" "$work/agenthost_0.0.0~previous-1~deb${n}u1_amd64.deb" >/dev/null
  cp "$work/agenthost_0.0.0~previous-1~deb${n}u1_amd64.deb" "$srv/agenthost_previous_amd64.deb"
  # scripts/install.sh with what it needs, and the binaries it takes (--from).
  src="$srv/src"; mkdir -p "$src/scripts" "$src/packaging"
  cp scripts/install.sh scripts/render-config.sh scripts/fetch-wakeword.sh "$src/scripts/"; cp -r systemd "$src/"; cp packaging/sysusers.conf "$src/packaging/"; cp agenthost.example.yaml "$src/"
  mkdir -p "$srv/from"; cp -r "bin/package/$suite/amd64/agenthost" "bin/package/$suite/amd64/agenthost-wakeword" "bin/package/$suite/amd64/plugins" "$srv/from/"
  mkdir -p "$srv/wakeword-packs"; cp "$packs"/*.tgz "$srv/wakeword-packs/"

  export SYSTEM_TEST_PID=$sysd_pid SYSTEM_TEST_ROOT=$merged SYSTEM_TEST_REPO=$repo SYSTEM_TEST_SUITE=$suite \
    SYSTEM_TEST_DEB=/srv/agenthost-test/agenthost_amd64.deb SYSTEM_TEST_DEB_PREV=/srv/agenthost-test/agenthost_previous_amd64.deb \
    REPO_TEST_DEB=$d REPO_TEST_DEB_PREV="$work/agenthost_0.0.0~previous-1~deb${n}u1_amd64.deb" \
    SYSTEM_TEST_WAKEWORD_PACKS=/srv/agenthost-test/wakeword-packs
  section "$suite: TestSystem"
  run_tests "$suite-TestSystem" '^TestSystem$' "$@" || fail=1
  section "$suite: TestAptRepository"
  run_tests "$suite-TestAptRepository" '^TestAptRepository$' "$@" || fail=1
  section "$suite: TestWakeWordFromThePackage"
  run_tests "$suite-TestWakeWordFromThePackage" '^TestWakeWordFromThePackage$' "$@" || fail=1
  section "$suite: TestMediaFromThePackage"
  run_tests "$suite-TestMediaFromThePackage" '^TestMediaFromThePackage$' "$@" || fail=1
  section "$suite: TestChildrenFromThePackage (the sandbox under the installed service)"
  run_tests "$suite-TestChildrenFromThePackage" '^TestChildrenFromThePackage$' "$@" || fail=1
  if [ "$suite" = trixie ]; then
    section "$suite: TestDesktop (PipeWire)"
    run_tests "$suite-TestDesktop" '^TestDesktop$' "$@" || fail=1
  fi
  nsenter -t "$sysd_pid" -m -p -r -w journalctl --no-pager -o short-monotonic > "$work/$suite-journal.log" 2>&1 || true
  poweroff
done

section "lintian results"
if wait "$lint_pid"; then lint=clean; else lint=FAILED; fail=1; fi
lint_pid=""
cat "$work/lint.log"
summary+=("lintian: $lint")
((fail == 0))
