#!/usr/bin/env bash
# Builds the .deb of agenthost for one suite and some architectures, with the
# compilers and libraries of the system it runs on: scripts/package.sh runs it
# on the machine for the machine's own suite and chrooted into a cached root
# of the other suite (see there). It installs nothing and fetches nothing
# (GOPROXY=off inside a root: package.sh downloads the modules first).
# Usage: scripts/package-build.sh SUITE ARCH...   (prints one .deb path a line)
# Env (set by package.sh): VERSION (upstream part), CHANGELOG_DATE, OUT, NFPM.
#
# Release builds: cgo on (PortAudio, Opus, soxr), -trimpath, stripped
# (-s -w), position-independent (-buildmode=pie, for lintian's hardening
# checks and ASLR), with main.version set; hraban/opus without libopusfile
# (-tags nolibopusfile: agenthost only uses the encoder and decoder, so the
# package needs neither libopusfile0 nor libssl3); -tags grpcnotrace leaves
# out gRPC's tracing pages. internal/testbin.ReleaseFlags builds the same
# way for the benchmarks. The runtime Depends are computed by dpkg-shlibdeps
# from each binary's NEEDED entries (objdump -p is printed for the record)
# and the symbols/shlibs files of this suite's multiarch libraries, as a
# Debian build would: on trixie that is libasound2t64, on bookworm libasound2.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
source scripts/roots.sh
suite=$1; shift
: "${VERSION:?}" "${CHANGELOG_DATE:?}" "${OUT:?}" "${NFPM:?}"
# ~debNNu1: see scripts/package.sh for why.
deb_version="$VERSION-1~deb$(suite_number "$suite")u1"
mkdir -p "$OUT"
# The system unit: /lib/systemd/system as bookworm's debhelper puts it;
# trixie finished the /usr merge, and its lintian refuses /lib
# (aliased-location). dpkg keeps the file when an upgrade moves it between
# the two names of one folder within the package (TestSystem on trixie
# upgrades from a package with the bookworm layout).
case $suite in bookworm) unit_dir=/lib/systemd/system ;; *) unit_dir=/usr/lib/systemd/system ;; esac

# The plugins to bundle: every folder under plugins/ whose package is main.
plugins=()
for d in plugins/*/; do
  d=${d%/}
  [ "$(go list -f '{{.Name}}' "./$d" 2>/dev/null || true)" = main ] && plugins+=("$(basename "$d")")
done
((${#plugins[@]})) || { echo "package: no plugin found under plugins/ (go list failed?)" >&2; go list ./plugins/... >&2; exit 1; }
echo "package: $suite: version $deb_version; gcc $(gcc -dumpfullversion); bundled plugins: ${plugins[*]}" >&2

# The man pages, from the CLI's own help and the example configuration:
# made by a native build (the packages' binaries may be of another
# architecture), the same for every architecture.
man="bin/package/$suite/man"
rm -rf "$man"; mkdir -p "$man"
go build -tags nolibopusfile,grpcnotrace -ldflags "-X main.version=$VERSION" -o "$man/agenthost" ./cmd/agenthost
"$man/agenthost" man --example agenthost.example.yaml "$man"
rm "$man/agenthost"
gzip -9n "$man/agenthost.1" "$man/agenthost.yaml.5"

for arch in "$@"; do
  case $arch in
    amd64) goarch=amd64 goarm="" cc=gcc triple=x86_64-linux-gnu objdump=objdump ;;
    arm64) goarch=arm64 goarm="" cc=aarch64-linux-gnu-gcc triple=aarch64-linux-gnu objdump=aarch64-linux-gnu-objdump ;;
    armhf) goarch=arm goarm=7 cc=arm-linux-gnueabihf-gcc triple=arm-linux-gnueabihf objdump=arm-linux-gnueabihf-objdump ;;
    *) echo "package: unknown architecture $arch (amd64, arm64, armhf)" >&2; exit 2 ;;
  esac
  stage="bin/package/$suite/$arch"
  rm -rf "$stage"; mkdir -p "$stage/plugins" "$stage/shlibs/debian"
  build() { # OUT PKG
    CGO_ENABLED=1 GOOS=linux GOARCH=$goarch GOARM=$goarm CC=$cc \
      PKG_CONFIG_LIBDIR=/usr/lib/$triple/pkgconfig:/usr/share/pkgconfig \
      go build -tags nolibopusfile,grpcnotrace -buildmode=pie -trimpath \
      -ldflags "-s -w -X main.version=$VERSION" -o "$1" "$2"
  }
  start=$SECONDS
  build "$stage/agenthost" ./cmd/agenthost
  build "$stage/agenthost-wakeword" ./cmd/agenthost-wakeword   # loads ONNX Runtime at run time: no Depends
  for p in "${plugins[@]}"; do build "$stage/plugins/$p" "./plugins/$p"; done
  echo "package: $suite/$arch built in $((SECONDS - start)) s; agenthost $(stat -c %s "$stage/agenthost") bytes" >&2
  echo "package: $suite/$arch agenthost NEEDED: $("$objdump" -p "$stage/agenthost" | awk '/NEEDED/ {printf "%s ", $2}')" >&2

  # Depends from the binaries, the Debian way.
  printf 'Source: agenthost\n\nPackage: agenthost\nArchitecture: any\n' > "$stage/shlibs/debian/control"
  bins=("$repo/$stage/agenthost" "$repo/$stage/agenthost-wakeword"); for p in "${plugins[@]}"; do bins+=("$repo/$stage/plugins/$p"); done
  shlibs=$(cd "$stage/shlibs" && dpkg-architecture -a"$arch" -q DEB_HOST_ARCH >/dev/null 2>&1 &&
           dpkg-architecture -a"$arch" -c dpkg-shlibdeps -O -e"${bins[0]}" "${bins[@]/#/-e}" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
  [ -n "$shlibs" ] || { echo "package: dpkg-shlibdeps found no dependencies for $suite/$arch" >&2; exit 1; }
  depends=$(printf '%s\n' "$shlibs" | sed 's/, /\n/g'; printf 'systemd | systemd-standalone-sysusers | systemd-sysusers\n')
  echo "package: $suite/$arch Depends: $(printf '%s' "$depends" | paste -sd, | sed 's/,/, /g')" >&2

  cp -r "$man" "$stage/man"
  scripts/render-config.sh "$stage/agenthost.yaml"
  sed -e "s/@VERSION@/$deb_version/" -e "s/@SUITE@/$suite/" -e "s/@DATE@/$CHANGELOG_DATE/" packaging/changelog \
    | gzip -9n > "$stage/changelog.Debian.gz"

  DEB_ARCH=$arch DEB_VERSION=$deb_version STAGE="$repo/$stage" REPO="$repo" UNIT_DIR=$unit_dir \
  DEPENDS_YAML=$(printf '%s\n' "$depends" | sed 's/^/  - /') \
    perl -pe 's/\$\{(\w+)\}/exists $ENV{$1} ? $ENV{$1} : die "nfpm.yaml: \${$1} is not set\n"/ge' packaging/nfpm.yaml > "$stage/nfpm.yaml"
  deb="$OUT/agenthost_${deb_version}_${arch}.deb"
  "$NFPM" package --packager deb --config "$stage/nfpm.yaml" --target "$deb" >&2
  echo "$deb"
done
