# shellcheck shell=bash
# Cached Debian roots, sourced by scripts/package.sh, scripts/lint.sh,
# scripts/test-install.sh and scripts/test-system.sh (all run as root).
#
# A root is made once by mmdebstrap from Debian's archive (apt inside, so it
# reads Packages.xz and fetches in parallel; debootstrap failed on the trixie
# armhf index here) and kept in ${XDG_CACHE_HOME:-$HOME/.cache}/agenthost/roots
# under a name that carries a hash of everything it was made from: a changed
# package list makes a new root, and the old one of that name is removed.
# A half-made root never counts: it is built in NAME.tmp and renamed.
#
# Suites: the point release and its -updates, no -security: the package's
# Depends are the minimum versions dpkg-shlibdeps takes from the symbols files,
# which the release itself satisfies, and every extra index is one more that a
# mirror in mid-sync can break (bookworm-security's armhf index did, here).
# For the same reason, when the only index the mirror serves broken is an
# architecture's -updates (trixie-updates' armhf, here, since 2026-11-23), that
# architecture goes without -updates (a root made from the release alone,
# stamped .without-updates; a foreign architecture left out of the -updates
# line with [arch-=ARCH]) and says so, instead of being blocked.
#
# root_run runs a command chrooted into a root in a mount namespace of its own
# (proc, dev, a tmpfs /tmp and the bind mounts asked for), so nothing stays
# mounted when it ends, whatever way it ends.

DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
ROOTS_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/agenthost/roots"

# suite_number SUITE: Debian's release number, for the ~debNNu1 version suffix.
suite_number() {
  case $1 in
    bookworm) echo 12 ;;
    trixie) echo 13 ;;
    *) echo "roots: unknown suite $1 (bookworm, trixie)" >&2; return 2 ;;
  esac
}

# host_suite: the codename of the machine we run on (bookworm here).
host_suite() { (. /etc/os-release && echo "${VERSION_CODENAME:-}"); }

# mirror_trouble LOG: prints the lines of LOG that say the mirror served an
# index that does not match its Release file (the mirror is mid-sync).
mirror_trouble() {
  grep -E 'File has unexpected size|Hash Sum mismatch|Mirror sync in progress|Packages.*(was corrupt|404)|Couldn.t download .*Packages' "$1" || true
}

# updates_only LOG: true when every index apt failed to fetch in LOG is a
# -updates suite's.
updates_only() {
  local failed; failed=$(grep -E 'Failed to fetch' "$1") || return 1
  ! grep -qvE '/dists/[^/ ]+-updates/' <<< "$failed"
}

# safe_rm DIR: removes DIR unless something is mounted below it (a root
# whose maker was killed mid-way may still have the machine's /dev/shm there).
safe_rm() {
  local d m
  d=$(realpath -m "$1")
  [ -e "$d" ] || return 0
  m=$(awk -v d="$d/" 'index($2"/", d) == 1 {print $2}' /proc/self/mounts)
  if [ -n "$m" ]; then
    echo "roots: not removing $d: mounted below it: $(echo $m)" >&2
    return 1
  fi
  rm -rf "$d"
}

# root_make NAME SUITE ARCH VARIANT INCLUDE [lists]: prints the path of the
# cached root, making it when missing. INCLUDE is mmdebstrap's comma-separated
# list. With "lists" the root keeps apt's package lists and their binary cache
# (built once, inside), so that `apt-get install` in it needs no `apt-get
# update` first: under qemu that update costs minutes, natively seconds. Such
# lists older than ROOTS_LISTS_DAYS (default 3) are refreshed in the cache.
root_make() {
  local name=$1 suite=$2 arch=$3 variant=$4 include=$5 lists=${6:-}
  local key dir log s skip=()
  key=$(printf '%s|' "$suite" "$arch" "$variant" "$include" "$DEBIAN_MIRROR" "$lists" v1 | sha256sum | cut -c1-12)
  dir="$ROOTS_CACHE/$name-$key"
  [ -n "$lists" ] && skip=(--skip=cleanup/apt/lists)
  if [ -e "$dir/.complete" ]; then
    if [ -n "$lists" ] && [ -z "$(find "$dir/.complete" -mtime -"${ROOTS_LISTS_DAYS:-3}")" ]; then
      echo "roots: refreshing the package lists of $name (older than ${ROOTS_LISTS_DAYS:-3} days)" >&2
      if root_lists "$dir" > "$dir.refresh.log" 2>&1; then touch "$dir/.complete"; else
        # apt keeps the lists it verified before; a mirror in mid-sync only delays the refresh.
        echo "roots: could not refresh $name; its lists of $(date -r "$dir/.complete" +%F) stay (log: $dir.refresh.log):" >&2
        grep -E '^(E|W): ' "$dir.refresh.log" | sort -u | head -5 | sed 's/^/  /' >&2
      fi
    fi
    echo "$dir"; return 0
  fi
  mkdir -p "$ROOTS_CACHE"
  for old in "$ROOTS_CACHE/$name"-*; do   # the same root made from another list
    case $old in "$dir"|"$dir".*) ;; *) [ -d "$old" ] && { safe_rm "$old" || return 1; } ;; esac
  done
  safe_rm "$dir.tmp" || return 1
  log="$dir.log"; s=$SECONDS
  echo "roots: making $name ($suite $arch, mmdebstrap --variant=$variant${include:+ --include=$include}); log: $log" >&2
  local sources=("deb $DEBIAN_MIRROR $suite main" "deb $DEBIAN_MIRROR $suite-updates main") why=""
  # In a mount namespace of its own: the mounts it makes in the new root go
  # with it, however it ends.
  while ! unshare -m --propagation private -- mmdebstrap --variant="$variant" --architectures="$arch" ${include:+--include="$include"} "${skip[@]}" \
      "$suite" "$dir.tmp" "${sources[@]}" > "$log" 2>&1; do
    safe_rm "$dir.tmp" || true
    why=$(mirror_trouble "$log")
    if ((${#sources[@]} == 2)) && [ -n "$why" ] && updates_only "$log"; then
      echo "roots: $name: the mirror's $suite-updates index for $arch is broken; making it from $suite alone:" >&2
      echo "$why" | sort -u | sed 's/^/  /' >&2
      sources=("${sources[0]}"); mv "$log" "$log.with-updates"
      continue
    fi
    if [ -n "$why" ]; then
      echo "roots: $name: BLOCKED by the mirror (its index does not match its Release file):" >&2
      echo "$why" | sort -u | sed 's/^/  /' >&2
      return 3
    fi
    tail -n 25 "$log" >&2
    echo "roots: mmdebstrap failed for $name (log above: $log)" >&2
    return 1
  done
  ((${#sources[@]} == 2)) || echo "$why" > "$dir.tmp/.without-updates"
  if [ -n "$lists" ]; then
    root_run "$dir.tmp" -- apt-cache gencaches >> "$log" 2>&1 || { tail -n 20 "$log" >&2; return 1; }
  fi
  touch "$dir.tmp/.complete"; mv "$dir.tmp" "$dir"
  echo "roots: $name made in $((SECONDS - s)) s" >&2
  echo "$dir"
}

# root_lists ROOT: apt-get update and the binary cache, inside ROOT.
root_lists() {
  root_run "$1" -- sh -ec 'apt-get update -q; apt-cache gencaches'
}

# root_run ROOT [-b PATH]... [-w PATH] -- COMMAND...: runs COMMAND (after
# env -i: give variables as NAME=VALUE words first) chrooted into ROOT, with
# each PATH bind-mounted at the same path inside and -w the working folder.
root_run() {
  local root=$1 binds=() wd=/; shift
  while [ "$1" != -- ]; do
    case $1 in -b) binds+=("$2") ;; -w) wd=$2 ;; *) echo "root_run: bad option $1" >&2; return 2 ;; esac
    shift 2
  done
  shift
  unshare -m --propagation private -- /bin/bash -ec '
    R=$1 wd=$2 n=$3; shift 3
    mount -t proc proc "$R/proc"
    mount --rbind /dev "$R/dev"
    mount -t tmpfs tmpfs "$R/tmp"
    # apt inside resolves the mirror with the machine'"'"'s resolver (never through a symlink).
    if [ ! -L "$R/etc/resolv.conf" ]; then
      [ -e "$R/etc/resolv.conf" ] || : > "$R/etc/resolv.conf"
      mount --bind /etc/resolv.conf "$R/etc/resolv.conf"
    fi
    for ((i = 0; i < n; i++)); do mkdir -p "$R$1"; mount --bind "$1" "$R$1"; shift; done
    cd "$R$wd"
    exec chroot "$R" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      HOME=/tmp LANG=C.UTF-8 /bin/sh -c "cd \"\$0\" && exec env \"\$@\"" "$wd" "$@"
  ' bash "$root" "$wd" "${#binds[@]}" "${binds[@]}" "$@"
}

# root_add_arch ROOT ARCH PACKAGES...: adds a foreign architecture to a root
# and installs PACKAGES (names without :ARCH get it appended); once, stamped.
# A mirror whose index for ARCH is broken leaves the root as it was and
# returns 3 after printing apt's error (for -updates alone, see the top).
root_add_arch() {
  local root=$1 arch=$2; shift 2
  [ -e "$root/.arch-$arch" ] && return 0
  local pkgs=() p log="$root.arch-$arch.log" why="" ok=1
  local add='apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" && apt-get clean'
  for p in "$@"; do [[ $p == *:* ]] && pkgs+=("$p") || pkgs+=("$p:$arch"); done
  echo "roots: adding $arch to $(basename "$root"): ${pkgs[*]}" >&2
  root_run "$root" -- dpkg --add-architecture "$arch"
  if ! root_run "$root" -- sh -ec "$add" sh "${pkgs[@]}" > "$log" 2>&1; then
    ok="" why=$(mirror_trouble "$log")
    if [ -n "$why" ] && updates_only "$log"; then
      echo "roots: $arch in $(basename "$root"): the mirror's -updates index for $arch is broken; $arch goes without -updates:" >&2
      echo "$why" | sort -u | sed 's/^/  /' >&2
      sed -i -E "s|^deb (\[([^]]*)\] )?(\S+ \S+-updates )|deb [\2 arch-=$arch] \3|" "$root/etc/apt/sources.list"
      mv "$log" "$log.with-updates"
      if root_run "$root" -- sh -ec "$add" sh "${pkgs[@]}" > "$log" 2>&1; then ok=1; else why=$(mirror_trouble "$log"); fi
    fi
  fi
  if [ -z "$ok" ]; then
    # Leave the root as it was: without the architecture, and with lists that apt can read.
    root_run "$root" -- dpkg --remove-architecture "$arch" >/dev/null 2>&1 || true
    if [ -n "$why" ]; then
      echo "roots: $arch in $(basename "$root"): BLOCKED by the mirror (its index does not match its Release file):" >&2
      echo "$why" | sort -u | sed 's/^/  /' >&2
      grep -E '^E: ' "$log" | sort -u | sed 's/^/  /' >&2
      return 3
    fi
    tail -n 25 "$log" >&2
    return 1
  fi
  touch "$root/.arch-$arch"
}
