#!/usr/bin/env bash
# Installs what packaging and the system test need beyond scripts/install-deps.sh:
# Debian's cross compilers for arm64 and armhf, the multiarch -dev packages the
# cgo build links against (PortAudio, ALSA, JACK, Opus, opusfile, soxr, speexdsp), binutils
# for objdump -p on foreign ELFs (they come with the cross compilers), qemu-user
# to run the foreign binaries (and qemu-user-static with binfmt-support for the
# foreign roots), lintian, mmdebstrap for the cached roots, reprepro and gnupg
# for the signed APT repository.
# Idempotent: it only installs what is missing. Runs apt as root (sudo otherwise).
#
# Mirror skew: a Multi-Arch: same library such as libssl3 (pulled in by
# libopusfile0) must have one version on every architecture. When one
# architecture's index fails to download (seen here: bookworm-security armhf,
# "File has unexpected size … Mirror sync in progress?"), apt silently uses
# the other suites for it, and the versions differ ("held broken packages").
# So a failed index is only a warning, and each such library is pinned to the
# newest version that every architecture can install, all in one apt call.
# (The release build does not link libopusfile at all, see package.sh, so a
# skew here can only break the opusfile -dev packages, not the packages.)
set -euo pipefail

ARCHES=(arm64 armhf)
TOOLS=(gcc-aarch64-linux-gnu gcc-arm-linux-gnueabihf libc6-dev-arm64-cross libc6-dev-armhf-cross
       qemu-user qemu-user-static binfmt-support lintian mmdebstrap arch-test dpkg-dev fakeroot reprepro gnupg)
DEV=(portaudio19-dev libasound2-dev libjack-jackd2-dev libopus-dev libopusfile-dev libsoxr-dev libspeexdsp-dev)
SKEW=(libssl3)   # Multi-Arch: same, pulled in by libopusfile0; must match the amd64 version

SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
want=("${TOOLS[@]}")
for a in "${ARCHES[@]}"; do
  for p in "${DEV[@]}" "${SKEW[@]}"; do want+=("$p:$a"); done
done
want+=("${SKEW[@]}")

missing=()
for a in "${ARCHES[@]}"; do
  dpkg --print-foreign-architectures | grep -qx "$a" || { echo "install-cross-deps: adding architecture $a" >&2; $SUDO dpkg --add-architecture "$a"; missing+=(arch); }
done
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then exit 0; fi
echo "install-cross-deps: installing ${missing[*]}" >&2
archopts=(-o "APT::Architectures::=$(dpkg --print-architecture)")
for a in "${ARCHES[@]}"; do archopts+=(-o "APT::Architectures::=$a"); done
$SUDO apt-get "${archopts[@]}" update -qq >&2 || echo "install-cross-deps: some indexes failed (mirror in sync?); going on with what apt has" >&2
native=$(dpkg --print-architecture)
pinned=()
for lib in "${SKEW[@]}"; do
  common=""
  for a in "$native" "${ARCHES[@]}"; do
    vs=$(apt-cache madison "$lib:$a" 2>/dev/null | awk -F'|' '{gsub(/ /,"",$2); print $2}' | sort -u)
    if [ -z "$common" ]; then common=$vs; else common=$(comm -12 <(echo "$common") <(echo "$vs")); fi
  done
  best=$(echo "$common" | grep . | sort -V | tail -1 || true)
  if [ -z "$best" ]; then echo "install-cross-deps: no version of $lib exists for every architecture" >&2; exit 1; fi
  for a in "$native" "${ARCHES[@]}"; do pinned+=("$lib:$a=$best"); done
done
rest=()
for p in "${want[@]}"; do
  skip=0; for lib in "${SKEW[@]}"; do [[ $p == "$lib" || $p == "$lib:"* ]] && skip=1; done
  ((skip)) || rest+=("$p")
done
# One call, so the Multi-Arch: same libraries come out at one version on every architecture.
DEBIAN_FRONTEND=noninteractive $SUDO apt-get "${archopts[@]}" install -y -qq --no-install-recommends --allow-downgrades "${pinned[@]}" "${rest[@]}" >&2
