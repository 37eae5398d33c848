#!/usr/bin/env bash
# Installs what agenthost needs to build, run and test on Debian / Raspberry Pi OS:
# the apt packages (C libraries for PortAudio and Opus, audio tools the tests use)
# and, when no Go >= 1.26 is on PATH, a Go toolchain from the Go module proxy.
# Idempotent: it only installs what is missing. Prints the PATH line to use.
set -euo pipefail

GO_VERSION=1.26.8
PACKAGES=(
  build-essential pkg-config ca-certificates curl unzip
  portaudio19-dev libportaudio2 libjack-jackd2-dev libasound2-dev libasound2-plugins alsa-utils   # PortAudio through ALSA
  libopus-dev libopusfile-dev libsoxr-dev libspeexdsp-dev                      # Opus codec, resampler, echo canceller
  sox espeak-ng                                                                # test speech and measurement
  flite festival festvox-kallpc16k festvox-kdlpc16k festvox-us-slt-hts         # the wake set's other synthesizers
  ffmpeg                                                                       # the media plugin's decoder
  bubblewrap                                                                   # the sandbox where the kernel has no Landlock
  lame vorbis-tools flac opus-tools                                            # encoders for the media plugin's test sound
  python3                                                                      # scripts/demo.sh --music serves its music (http.server)
)
# The MCP tests run third-party MCP programs from npm; a machine without Node
# gets Debian's, and where that is older than 20 (bookworm's 18)
# scripts/install-mcp-test-deps.sh adds a Node 20 from the npm registry.
command -v node >/dev/null 2>&1 || PACKAGES+=(nodejs npm)

# The wake set's other voices made from recordings of people, in Debian's
# contrib and non-free (test material only, never shipped): festival's British
# diphones, MBROLA's (four native speakers, sixteen reading English with an
# accent), RHVoice's and SVOX Pico's.
VOICES=(festvox-rablpc16k festvox-don mbrola rhvoice rhvoice-english libttspico-utils)
for v in us1 us2 us3 en1 af1 nl2 fr1 fr4 de1 de2 de3 de4 de5 de6 gr2 hu1 pl1 ro1 sw1 sw2; do VOICES+=("mbrola-$v"); done
PACKAGES+=("${VOICES[@]}")

SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
# apt-get update fails on one index a mirror is still syncing; what it could
# read is enough, and apt-get install says what is missing.
apt_update() { $SUDO apt-get update -qq || echo "install-deps: apt-get update reported errors; going on" >&2; }
# The entry for Debian's contrib and non-free, signed by the keyring the
# system's own Debian entries name (bookworm's debian-archive-keyring.gpg,
# trixie's .pgp): apt reads no list at all when two entries of one source
# name different ones.
voices_source() {
  local d="${APT_SOURCES_D:-/etc/apt/sources.list.d}" f keyring=""
  for f in "$d"/*.sources; do
    [ -f "$f" ] && [ "$(basename "$f")" != agenthost-test-voices.sources ] || continue
    keyring=$(sed -n 's|^Signed-By: *\(/[^ ]*debian-archive-keyring\.[a-z]*\) *$|\1|p' "$f" | head -n1)
    if [ -n "$keyring" ]; then break; fi
  done
  if [ -z "$keyring" ]; then
    keyring=/usr/share/keyrings/debian-archive-keyring.gpg
    if [ -e /usr/share/keyrings/debian-archive-keyring.pgp ]; then keyring=/usr/share/keyrings/debian-archive-keyring.pgp; fi
  fi
  printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: %s\nComponents: contrib non-free\nSigned-By: %s\n' "$1" "$keyring"
}
# Whether an apt entry names non-free (not only non-free-firmware).
has_non_free() { grep -rhsqE '^[^#]*[[:space:]]non-free([[:space:]]|$)' /etc/apt/sources.list /etc/apt/sources.list.d/; }
if ! dpkg-query -W -f='${Status}' mbrola-us1 2>/dev/null | grep -q "install ok installed" && ! has_non_free; then
  . /etc/os-release
  if [ "${ID:-}" = debian ]; then
    echo "install-deps: enabling Debian's contrib and non-free for the test voices (/etc/apt/sources.list.d/agenthost-test-voices.sources)" >&2
    voices_source "$VERSION_CODENAME" | $SUDO tee /etc/apt/sources.list.d/agenthost-test-voices.sources >/dev/null
  else
    echo "install-deps: the test voices (MBROLA, RHVoice, SVOX Pico) are in contrib and non-free: enable those in apt's sources of ${PRETTY_NAME:-this system}" >&2
  fi
fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}" >&2
  apt_update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

go_ok() {
  command -v go >/dev/null 2>&1 || return 1
  local v; v=$(go env GOVERSION 2>/dev/null | sed 's/^go//')
  [ "$(printf '%s\n1.26\n' "$v" | sort -V | head -1)" = "1.26" ]
}
if ! go_ok; then
  root="${XDG_CACHE_HOME:-$HOME/.cache}/agenthost/go$GO_VERSION"
  if [ ! -x "$root/bin/go" ]; then
    arch=$(dpkg --print-architecture); case "$arch" in armhf) arch=armv6l;; esac
    proxy=$(printf '%s' "${GOPROXY:-https://proxy.golang.org}" | cut -d, -f1)
    url="$proxy/golang.org/toolchain/@v/v0.0.1-go$GO_VERSION.linux-$arch.zip"
    echo "install-deps: fetching Go $GO_VERSION from $proxy" >&2
    tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
    curl -fsSL "$url" -o "$tmp/go.zip"
    unzip -q "$tmp/go.zip" -d "$tmp/x"
    mkdir -p "$(dirname "$root")"; rm -rf "$root"
    mv "$tmp/x/golang.org/toolchain@v0.0.1-go$GO_VERSION.linux-$arch" "$root"
    chmod +x "$root/bin/"* "$root/pkg/tool/"*/* 2>/dev/null || true
  fi
  echo "export PATH=$root/bin:\$PATH"
fi
