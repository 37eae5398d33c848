#!/usr/bin/env bash
# Installs agenthost where a .deb does not fit (another distribution, a dev
# build): the same files as the package, the system user, and the unit,
# enabled and started. Run as root (sudo). Running it again changes nothing
# unless a file differs; --uninstall removes what it installed and keeps
# /etc/agenthost (your config) and /var/lib/agenthost (the plugins' data).
#
#   sudo scripts/install.sh                     # build from this checkout (needs Go, see scripts/env.sh)
#   sudo scripts/install.sh --from DIR          # take DIR/agenthost and DIR/plugins/* (e.g. bin/package/arm64)
#   sudo scripts/install.sh --system | --user   # choose the unit instead of letting the script decide
#   sudo scripts/install.sh --which             # only say which unit it would choose, and why
#   sudo scripts/install.sh --uninstall
#
# System or user unit: when PipeWire runs in the session of the user who
# called sudo (SUDO_USER, or --for USER), PipeWire owns the sound card and a
# system service gets no sound, so the user unit is enabled for that user
# (with lingering, so it runs without a login); otherwise the system unit,
# which talks to ALSA directly as the user agenthost in the group audio.
set -euo pipefail
cd "$(dirname "$0")/.."

from="" mode=auto action=install who=${SUDO_USER:-}
while (($#)); do
  case $1 in
    --from) from=$2; shift 2 ;;
    --system) mode=system; shift ;;
    --user) mode=user; shift ;;
    --for) who=$2; shift 2 ;;
    --which) action=which; shift ;;
    --uninstall) action=uninstall; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "install.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ "$who" = root ] && who=""

say() { echo "install.sh: $*"; }
die() { echo "install.sh: $*" >&2; exit 1; }

# choose sets unit_mode and why.
choose() {
  local pw=""
  [ -n "$who" ] && pw=$(pgrep -u "$who" -x pipewire 2>/dev/null | head -1 || true)
  case $mode in
    system) unit_mode=system why="asked for with --system" ;;
    user)
      [ -n "$who" ] || die "--user needs the desktop user: run through sudo from that user, or add --for USER"
      unit_mode=user why="asked for with --user" ;;
    auto)
      if [ -n "$pw" ]; then
        unit_mode=user why="PipeWire runs in $who's session (pid $pw) and owns the sound card; a system service would get no sound"
      else
        unit_mode=system why="no PipeWire in ${who:-any sudo caller}'s session: the system service uses ALSA directly"
      fi ;;
  esac
}

if [ "$action" = which ]; then
  choose; say "would use the $unit_mode unit: $why"; exit 0
fi
[ "$(id -u)" -eq 0 ] || die "run as root: sudo $0 $*"

manifest=/usr/lib/agenthost/.installed-by-install.sh
# systemctl --user as that user, through its manager's private socket
# (`systemctl --user -M USER@` would need systemd-machined).
user_systemctl_of() { local u=$1; shift; runuser -u "$u" -- env XDG_RUNTIME_DIR="/run/user/$(id -u "$u")" systemctl --user "$@"; }
user_systemctl() { user_systemctl_of "$who" "$@"; }

if [ "$action" = uninstall ]; then
  [ -f "$manifest" ] || die "nothing to uninstall: $manifest is missing (a .deb install is removed with apt remove agenthost)"
  if systemctl list-unit-files agenthost.service >/dev/null 2>&1; then
    systemctl disable --now agenthost.service >/dev/null 2>&1 || true
  fi
  owner=$(sed -n 's/^# user unit for //p' "$manifest")
  if [ -n "$owner" ]; then
    user_systemctl_of "$owner" disable --now agenthost.service >/dev/null 2>&1 || true
    say "stopped and disabled the user unit of $owner (lingering left as it is: loginctl disable-linger $owner)"
  fi
  while read -r f; do
    case $f in '#'*|'') continue ;; esac
    rm -f "$f"
  done < "$manifest"
  rm -f "$manifest"
  rmdir /usr/lib/agenthost/plugins /usr/lib/agenthost 2>/dev/null || say "kept /usr/lib/agenthost/plugins: it holds plugins install.sh did not put there"
  systemctl daemon-reload 2>/dev/null || true
  say "removed agenthost; kept /etc/agenthost (config), /var/lib/agenthost (data) and the user agenthost"
  exit 0
fi

if dpkg-query -W -f='${Status}' agenthost 2>/dev/null | grep -q "install ok installed"; then
  die "the agenthost package is installed; update it with apt instead (or apt remove it first)"
fi

# The binaries: taken from --from, or built from this checkout.
if [ -z "$from" ]; then
  source scripts/env.sh
  from=bin/install
  mkdir -p "$from/plugins"
  version=$(scripts/version.sh 2>/dev/null || echo 0.0.0+git0.local)
  say "building agenthost $version and the bundled plugins"
  go build -tags nolibopusfile,grpcnotrace -buildmode=pie -trimpath -ldflags "-s -w -X main.version=$version" -o "$from/agenthost" ./cmd/agenthost
  go build -buildmode=pie -trimpath -ldflags "-s -w" -o "$from/agenthost-wakeword" ./cmd/agenthost-wakeword
  for d in plugins/*/; do
    d=${d%/}
    [ "$(go list -f '{{.Name}}' "./$d" 2>/dev/null || true)" = main ] || continue
    go build -tags grpcnotrace -buildmode=pie -trimpath -ldflags "-s -w" -o "$from/plugins/$(basename "$d")" "./$d"
  done
fi
[ -x "$from/agenthost" ] || die "$from/agenthost is missing"

changed=0
files=()
# put SRC DST MODE: installs DST only if it differs; a new file is renamed into
# place, so a running host never sees (or runs) a half-written one.
put() {
  local src=$1 dst=$2 m=$3
  files+=("$dst")
  if [ -f "$dst" ] && cmp -s "$src" "$dst" && [ "$(stat -c %a "$dst")" = "${m#0}" ] && [ "$(stat -c %u:%g "$dst")" = 0:0 ]; then
    return
  fi
  mkdir -p "$(dirname "$dst")"
  install -o root -g root -m "$m" "$src" "$(dirname "$dst")/.$(basename "$dst").tmp"
  mv -f "$(dirname "$dst")/.$(basename "$dst").tmp" "$dst"
  say "installed $dst"
  changed=1
}

put "$from/agenthost" /usr/bin/agenthost 0755
for p in "$from"/plugins/*; do put "$p" "/usr/lib/agenthost/plugins/$(basename "$p")" 0755; done
# The wake-word detector and the script that fetches its models (not installed by this script).
[ -x "$from/agenthost-wakeword" ] && put "$from/agenthost-wakeword" /usr/lib/agenthost/agenthost-wakeword 0755
put scripts/fetch-wakeword.sh /usr/lib/agenthost/fetch-wakeword 0755
put systemd/agenthost.service /lib/systemd/system/agenthost.service 0644
put systemd/user/agenthost.service /usr/lib/systemd/user/agenthost.service 0644
put packaging/sysusers.conf /usr/lib/sysusers.d/agenthost.conf 0644
put systemd/examples/gpio.conf /usr/share/doc/agenthost/examples/gpio.conf 0644
put systemd/examples/mcp-node.conf /usr/share/doc/agenthost/examples/mcp-node.conf 0644

# The config: installed once, never overwritten (like a conffile).
if [ ! -e /etc/agenthost/agenthost.yaml ]; then
  tmp=$(mktemp); scripts/render-config.sh "$tmp"
  install -d -m 0755 /etc/agenthost
  install -m 0644 "$tmp" /etc/agenthost/agenthost.yaml; rm -f "$tmp"
  say "installed /etc/agenthost/agenthost.yaml (edit it, then: sudo systemctl reload agenthost)"
  changed=1
fi

# The user and group agenthost (member of audio).
if ! getent passwd agenthost >/dev/null || ! id -nG agenthost | tr ' ' '\n' | grep -qx audio; then
  if command -v systemd-sysusers >/dev/null; then
    systemd-sysusers agenthost.conf
  else
    getent group agenthost >/dev/null || groupadd --system agenthost
    getent passwd agenthost >/dev/null || useradd --system --gid agenthost --home-dir /var/lib/agenthost --shell /usr/sbin/nologin agenthost
    usermod -a -G audio agenthost
  fi
  say "created the system user agenthost (groups: $(id -nG agenthost))"
  changed=1
fi
if [ -n "$who" ] && ! id -nG "$who" | tr ' ' '\n' | grep -qx agenthost; then
  usermod -a -G agenthost "$who"
  say "added $who to the group agenthost (for agenthost status/say without sudo; takes effect at the next login)"
  changed=1
fi

{
  echo "# files installed by scripts/install.sh; --uninstall removes them"
  printf '%s\n' "${files[@]}"
} > "$manifest.new"
choose
say "using the $unit_mode unit: $why"
[ "$unit_mode" = user ] && echo "# user unit for $who" >> "$manifest.new"
if cmp -s "$manifest.new" "$manifest"; then rm -f "$manifest.new"; else mv -f "$manifest.new" "$manifest"; fi

if [ ! -d /run/systemd/system ]; then
  say "systemd is not running here: enable the unit yourself (systemctl enable --now agenthost)"
  exit 0
fi
((changed)) && systemctl daemon-reload
if [ "$unit_mode" = system ]; then
  systemctl is-enabled --quiet agenthost.service 2>/dev/null || { systemctl enable agenthost.service; changed=1; }
  if ! systemctl is-active --quiet agenthost.service; then
    systemctl start agenthost.service; say "started agenthost.service"
  elif ((changed)); then
    systemctl restart agenthost.service; say "restarted agenthost.service"
  fi
else
  if systemctl is-enabled --quiet agenthost.service 2>/dev/null; then
    systemctl disable --now agenthost.service; say "disabled the system unit (the user unit owns the sound now)"
  fi
  if [ "$(loginctl show-user "$who" -p Linger --value 2>/dev/null)" != yes ]; then
    loginctl enable-linger "$who"; say "enabled lingering for $who (the user unit runs without a login)"
  fi
  for _ in $(seq 100); do   # the user manager starts with lingering (or a login)
    [ -S "/run/user/$(id -u "$who")/systemd/private" ] && break; sleep 0.1
  done
  user_systemctl daemon-reload
  user_systemctl is-enabled --quiet agenthost.service 2>/dev/null || { user_systemctl enable agenthost.service; changed=1; }
  if ! user_systemctl is-active --quiet agenthost.service; then
    user_systemctl start agenthost.service; say "started the user unit of $who"
  elif ((changed)); then
    user_systemctl restart agenthost.service; say "restarted the user unit of $who"
  fi
fi
((changed)) || say "nothing to change: agenthost is installed and running"
