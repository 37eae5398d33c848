#!/usr/bin/env bash
# Builds the Debian packages of agenthost into dist/: for Debian 12 bookworm
# and Debian 13 trixie (and the Raspberry Pi OS of each), for amd64, arm64 and
# armhf (32-bit Raspberry Pi OS, ARMv7), each against its own suite's libraries.
#   scripts/package.sh                          # all six
#   scripts/package.sh trixie/armhf bookworm    # some: SUITE/ARCH, SUITE or ARCH
# Env: PACKAGE_VERSION (default: scripts/version.sh: 0.0.0+git<commit time>.<hash>), OUT (default dist).
# Prints the path of each .deb, one a line, in the order asked for. A target
# that needs an index the Debian mirror serves broken (its size or hash does
# not match the Release file: a mirror in mid-sync) is reported BLOCKED with
# apt's error and the rest is built; the exit status is then 3, or 0 with
# ALLOW_BLOCKED=1 (scripts/test-system.sh). Every run tries again.
#
# Versions: <upstream>-1~deb12u1 on bookworm and <upstream>-1~deb13u1 on
# trixie, Debian's suffix for one source rebuilt for several releases: the
# two builds of one commit have different file names, so they sit side by
# side in one repository; ~deb12 sorts below ~deb13, so a bookworm→trixie
# dist-upgrade takes the trixie build (linked to trixie's libasound2t64);
# a newer commit sorts above both whatever the suffix; and the tilde sorts
# below a plain <upstream>-1, should one ever be built without a suffix.
#
# The machine's own suite (bookworm here) builds on the machine, with
# Debian's cross compilers and multiarch -dev packages
# (scripts/install-cross-deps.sh). The other suite builds chrooted into a root
# of that suite (scripts/roots.sh: made once by mmdebstrap, cached outside the
# clone) holding its native and cross compilers, its -dev packages for each
# architecture, dpkg-dev and lintian; the Go toolchain, the module and build
# caches, nfpm and the clone are bind-mounted into it (trixie's own Go is too
# old). Runs as root for the root (sudo otherwise).
#
# nfpm, pinned at v2.45.2, is installed with `go install` into a cache
# outside the clone and runs as its CLI, not as a library: the project's
# go.mod gains none of nfpm's ~80 modules, the package is described
# declaratively in packaging/nfpm.yaml, and the pin is one line here. (v2.46+
# cannot be built from the module proxy: they need modules it refuses.)
# The build itself: scripts/package-build.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
source scripts/env.sh
source scripts/roots.sh

SUITES=(bookworm trixie)
ARCHES=(amd64 arm64 armhf)
targets=()
(($#)) || set -- "${SUITES[@]}"
for t in "$@"; do
  case $t in
    */*) targets+=("$t") ;;
    bookworm|trixie) for a in "${ARCHES[@]}"; do targets+=("$t/$a"); done ;;
    amd64|arm64|armhf) for s in "${SUITES[@]}"; do targets+=("$s/$t"); done ;;
    *) echo "package: unknown target $t (SUITE/ARCH, SUITE: ${SUITES[*]}, ARCH: ${ARCHES[*]})" >&2; exit 2 ;;
  esac
done
for t in "${targets[@]}"; do
  s=${t%/*} a=${t#*/}
  [[ " ${SUITES[*]} " == *" $s "* && " ${ARCHES[*]} " == *" $a "* ]] || { echo "package: unknown target $t" >&2; exit 2; }
done

NFPM_VERSION=v2.45.2
nfpm_dir="${XDG_CACHE_HOME:-$HOME/.cache}/agenthost/tools/nfpm-$NFPM_VERSION"
if [ ! -x "$nfpm_dir/nfpm" ]; then
  echo "package: installing nfpm $NFPM_VERSION into $nfpm_dir" >&2
  GOBIN="$nfpm_dir" GOFLAGS=-mod=mod go install "github.com/goreleaser/nfpm/v2/cmd/nfpm@$NFPM_VERSION"
fi

export VERSION=${PACKAGE_VERSION:-$(scripts/version.sh)}
export CHANGELOG_DATE; CHANGELOG_DATE=$(TZ=UTC0 date -R -d "@$(git log -1 --format=%ct)")
export NFPM="$nfpm_dir/nfpm"
export OUT=${OUT:-dist}
mkdir -p "$OUT"
out_abs=$(realpath "$OUT")
here=$(host_suite)
for t in "${targets[@]}"; do   # a root of another suite needs root
  if [ "${t%/*}" != "$here" ] && [ "$(id -u)" -ne 0 ]; then exec sudo -E "$0" "$@"; fi
done
list=$(mktemp); trap 'rm -f "$list"' EXIT
# Build-root contents: compilers and tools; the -dev packages of each architecture.
BUILD_TOOLS=(build-essential dpkg-dev pkgconf gcc-aarch64-linux-gnu gcc-arm-linux-gnueabihf
             libc6-dev-arm64-cross libc6-dev-armhf-cross lintian)
BUILD_DEV=(portaudio19-dev libasound2-dev libjack-jackd2-dev libopus-dev libsoxr-dev libspeexdsp-dev)

# build_root SUITE ARCH...: prints the root to build SUITE's packages in,
# with the -dev packages of each ARCH added (the native ones come with it).
build_root() {
  local suite=$1 root a inc; shift
  inc=$(IFS=,; echo "${BUILD_TOOLS[*]},${BUILD_DEV[*]}")
  root=$(root_make "build-$suite" "$suite" amd64 minbase "$inc") || return
  for a in "$@"; do
    [ "$a" = amd64 ] || root_add_arch "$root" "$a" "${BUILD_DEV[@]}" || return
  done
  echo "$root"
}

declare -A built=()
blocked=()
for suite in "${SUITES[@]}"; do
  want=()
  for t in "${targets[@]}"; do [ "${t%/*}" = "$suite" ] && want+=("${t#*/}"); done
  ((${#want[@]})) || continue
  if [ "$suite" = "$here" ]; then
    scripts/install-cross-deps.sh
    scripts/package-build.sh "$suite" "${want[@]}" > "$list"
  else
    go mod download
    ok=()
    for a in "${want[@]}"; do
      if build_root "$suite" "$a" > /dev/null; then ok+=("$a"); else
        rc=$?; ((rc == 3)) || exit 1
        blocked+=("$suite/$a")
      fi
    done
    ((${#ok[@]})) || continue
    root=$(build_root "$suite" "${ok[@]}")
    goroot=$(go env GOROOT) gocache=$(go env GOCACHE) gomodcache=$(go env GOMODCACHE)
    mkdir -p "$gocache"
    root_run "$root" -b "$repo" -b "$goroot" -b "$gocache" -b "$gomodcache" -b "$nfpm_dir" -b "$out_abs" -w "$repo" -- \
      PATH="$goroot/bin:/usr/sbin:/usr/bin:/sbin:/bin" GOCACHE="$gocache" GOMODCACHE="$gomodcache" GOPROXY=off GOTOOLCHAIN=local \
      GOFLAGS=-buildvcs=false GOTELEMETRY=off VERSION="$VERSION" CHANGELOG_DATE="$CHANGELOG_DATE" OUT="$OUT" NFPM="$NFPM" \
      bash scripts/package-build.sh "$suite" "${ok[@]}" > "$list"
  fi
  mapfile -t debs < "$list"
  for d in "${debs[@]}"; do
    a=${d##*_}; built["$suite/${a%.deb}"]=$d
  done
done
for t in "${targets[@]}"; do
  if [ -n "${built[$t]:-}" ]; then echo "${built[$t]}"; fi
done
if ((${#blocked[@]})); then
  echo "package: BLOCKED by the Debian mirror (see above): ${blocked[*]}" >&2
  [ "${ALLOW_BLOCKED:-}" = 1 ] || exit 3
fi
for t in "${targets[@]}"; do
  [ -n "${built[$t]:-}" ] || [[ " ${blocked[*]} " == *" $t "* ]] || { echo "package: $t was not built" >&2; exit 1; }
done
