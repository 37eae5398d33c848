#!/usr/bin/env bash
# Builds the Debian packages of agenthost for amd64, arm64 and armhf (32-bit
# Raspberry Pi OS, ARMv7) into dist/:
#   scripts/package.sh                 # all three
#   scripts/package.sh arm64           # some of them
# Env: PACKAGE_VERSION (default: 0.0.0+git<commit time>.<hash>), OUT (default dist).
#
# From a clean clone this one command is enough: it installs the apt packages
# (scripts/install-deps.sh, scripts/install-cross-deps.sh: Debian's cross
# compilers and the multiarch -dev packages), a Go toolchain if needed, and
# nfpm, pinned at v2.45.2, with `go install` into a cache outside the clone.
# nfpm runs as its CLI, not as a library: the project's go.mod gains none of
# nfpm's ~80 modules, the package is described declaratively in
# packaging/nfpm.yaml, and the pin is one line here. (v2.46+ cannot be built
# from the module proxy: they need modules it refuses.)
#
# Release builds: cgo on (PortAudio, Opus, soxr), -trimpath, stripped
# (-s -w), position-independent (-buildmode=pie, for lintian's hardening
# checks and ASLR), with main.version set; hraban/opus without libopusfile
# (-tags nolibopusfile: agenthost only uses the encoder and decoder, so the
# package needs neither libopusfile0 nor libssl3); -tags grpcnotrace leaves
# out gRPC's tracing pages. internal/testbin.ReleaseFlags builds the same
# way for the benchmarks. The runtime Depends are
# computed by dpkg-shlibdeps from each binary's NEEDED entries (objdump -p is
# printed for the record) and the symbols/shlibs files of the multiarch
# libraries, as a Debian build would.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
source scripts/env.sh
scripts/install-cross-deps.sh

NFPM_VERSION=v2.45.2
nfpm_dir="${XDG_CACHE_HOME:-$HOME/.cache}/agenthost/tools/nfpm-$NFPM_VERSION"
if [ ! -x "$nfpm_dir/nfpm" ]; then
  echo "package: installing nfpm $NFPM_VERSION into $nfpm_dir" >&2
  GOBIN="$nfpm_dir" GOFLAGS=-mod=mod go install "github.com/goreleaser/nfpm/v2/cmd/nfpm@$NFPM_VERSION"
fi
nfpm="$nfpm_dir/nfpm"

version=${PACKAGE_VERSION:-0.0.0+git$(git log -1 --format=%cd --date=format-local:%Y%m%d%H%M%S).$(git rev-parse --short=7 HEAD)}
deb_version="$version-1"
out=${OUT:-dist}
mkdir -p "$out"
arches=("$@"); ((${#arches[@]})) || arches=(amd64 arm64 armhf)

# The plugins to bundle: every folder under plugins/ whose package is main.
plugins=()
for d in plugins/*/; do
  d=${d%/}
  [ "$(go list -f '{{.Name}}' "./$d" 2>/dev/null || true)" = main ] && plugins+=("$(basename "$d")")
done
echo "package: version $deb_version; bundled plugins: ${plugins[*]}" >&2

for arch in "${arches[@]}"; do
  case $arch in
    amd64) goarch=amd64 goarm="" cc=gcc triple=x86_64-linux-gnu objdump=objdump ;;
    arm64) goarch=arm64 goarm="" cc=aarch64-linux-gnu-gcc triple=aarch64-linux-gnu objdump=aarch64-linux-gnu-objdump ;;
    armhf) goarch=arm goarm=7 cc=arm-linux-gnueabihf-gcc triple=arm-linux-gnueabihf objdump=arm-linux-gnueabihf-objdump ;;
    *) echo "package: unknown architecture $arch (amd64, arm64, armhf)" >&2; exit 2 ;;
  esac
  stage="bin/package/$arch"
  rm -rf "$stage"; mkdir -p "$stage/plugins" "$stage/shlibs/debian"
  build() { # OUT PKG
    CGO_ENABLED=1 GOOS=linux GOARCH=$goarch GOARM=$goarm CC=$cc \
      PKG_CONFIG_LIBDIR=/usr/lib/$triple/pkgconfig:/usr/share/pkgconfig \
      go build -tags nolibopusfile,grpcnotrace -buildmode=pie -trimpath \
      -ldflags "-s -w -X main.version=$version" -o "$1" "$2"
  }
  start=$SECONDS
  build "$stage/agenthost" ./cmd/agenthost
  build "$stage/agenthost-wakeword" ./cmd/agenthost-wakeword   # loads ONNX Runtime at run time: no Depends
  for p in "${plugins[@]}"; do build "$stage/plugins/$p" "./plugins/$p"; done
  echo "package: $arch built in $((SECONDS - start)) s; agenthost $(stat -c %s "$stage/agenthost") bytes" >&2
  echo "package: $arch agenthost NEEDED: $("$objdump" -p "$stage/agenthost" | awk '/NEEDED/ {printf "%s ", $2}')" >&2

  # Depends from the binaries, the Debian way.
  printf 'Source: agenthost\n\nPackage: agenthost\nArchitecture: any\n' > "$stage/shlibs/debian/control"
  bins=("$repo/$stage/agenthost" "$repo/$stage/agenthost-wakeword"); for p in "${plugins[@]}"; do bins+=("$repo/$stage/plugins/$p"); done
  shlibs=$(cd "$stage/shlibs" && dpkg-architecture -a"$arch" -q DEB_HOST_ARCH >/dev/null 2>&1 &&
           dpkg-architecture -a"$arch" -c dpkg-shlibdeps -O -e"${bins[0]}" "${bins[@]/#/-e}" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
  [ -n "$shlibs" ] || { echo "package: dpkg-shlibdeps found no dependencies for $arch" >&2; exit 1; }
  depends=$(printf '%s\n' "$shlibs" | sed 's/, /\n/g'; printf 'systemd | systemd-standalone-sysusers | systemd-sysusers\n')
  echo "package: $arch Depends: $(printf '%s' "$depends" | paste -sd, | sed 's/,/, /g')" >&2

  scripts/render-config.sh "$stage/agenthost.yaml"
  sed -e "s/@VERSION@/$deb_version/" -e "s/@DATE@/$(date -R -d "@$(git log -1 --format=%ct)")/" packaging/changelog \
    | gzip -9n > "$stage/changelog.Debian.gz"

  DEB_ARCH=$arch DEB_VERSION=$deb_version STAGE="$repo/$stage" REPO="$repo" \
  DEPENDS_YAML=$(printf '%s\n' "$depends" | sed 's/^/  - /') \
    perl -pe 's/\$\{(\w+)\}/exists $ENV{$1} ? $ENV{$1} : die "nfpm.yaml: \${$1} is not set\n"/ge' packaging/nfpm.yaml > "$stage/nfpm.yaml"
  deb="$out/agenthost_${deb_version}_${arch}.deb"
  "$nfpm" package --packager deb --config "$stage/nfpm.yaml" --target "$deb" >&2
  echo "$deb"
done
