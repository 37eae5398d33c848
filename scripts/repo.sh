#!/usr/bin/env bash
# Publishes packages into a signed APT repository with Debian's reprepro:
# one repository, two suites (bookworm, trixie), each for amd64, arm64 and
# armhf; a package goes to the suite its version names (~deb12u1: bookworm,
# ~deb13u1: trixie). Publishing a newer build of a package replaces the older
# one in its suite; `apt upgrade` on the speakers then takes it.
#
#   scripts/repo.sh REPO DEB...          # add or replace packages, re-sign
#   scripts/repo.sh REPO                 # (re)export and re-sign only
# Env: GNUPGHOME (default ~/.gnupg), REPO_KEY (a key id or user id; default:
# the first secret key there that can sign now, or a new ed25519 key made for
# "agenthost archive" when there is no secret key; when there are some and
# none can sign, as when the archive key expired, it lists them and why and
# fails), REPO_ORIGIN (default agenthost).
#
# REPO then holds what a web server serves as is (dists/, pool/) and
# agenthost-archive-keyring.gpg (the public key, binary, for Signed-By:) and
# agenthost-archive-keyring.asc (the same, armored). The private key stays in
# GNUPGHOME: keep it off the web server. README "On a Raspberry Pi" shows a
# speaker's deb822 source.
set -euo pipefail
[ $# -ge 1 ] || { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
repo=$1; shift
command -v reprepro >/dev/null && command -v gpg >/dev/null ||
  { echo "repo: needs reprepro and gpg (scripts/install-cross-deps.sh installs them)" >&2; exit 2; }
origin=${REPO_ORIGIN:-agenthost}
export GNUPGHOME=${GNUPGHOME:-$HOME/.gnupg}
mkdir -p "$GNUPGHOME"; chmod 700 "$GNUPGHOME"

# secret_keys [KEY]: one line per secret key: fingerprint, why it cannot sign
# (empty when it can), user id, tab-separated. In gpg's listing an uppercase
# S in field 12 says the key as a whole can sign now; an expired or revoked
# key keeps only the lowercase s of what it could once do.
secret_keys() {
  gpg --batch --with-colons --list-secret-keys "$@" 2>/dev/null | awk -F: -v OFS='\t' '
    function flush() { if (fpr != "") print fpr, why, uid; fpr = ""; uid = "" }
    $1 == "sec" {
      flush(); want = 1
      if ($2 ~ /e/) why = "expired"
      else if ($2 ~ /r/) why = "revoked"
      else if ($2 ~ /[idn]/) why = "invalid or disabled"
      else if ($12 !~ /S/) why = "has no usable signing key or subkey (expired?)"
      else why = ""
      next
    }
    $1 == "fpr" && want { fpr = $10; want = 0; next }
    $1 == "uid" && uid == "" { uid = $10 }
    END { flush() }'
}

key=${REPO_KEY:-}
seen=$(secret_keys ${key:+"$key"} || true)   # gpg fails on a REPO_KEY it does not know
usable=$(awk -F'\t' '$2 == "" {print $1; exit}' <<<"$seen")
if [ -z "$usable" ] && { [ -n "$seen" ] || [ -n "$key" ]; }; then
  {
    echo "repo: no usable signing key${key:+ for REPO_KEY=$key} in $GNUPGHOME; seen:"
    [ -n "$seen" ] && awk -F'\t' '{print "  " $1 " " $3 ": " $2}' <<<"$seen" || echo "  (none)"
    echo "repo: extend the archive key the speakers trust (gpg --quick-set-expire FPR 2y, and again with '*' for its"
    echo "      subkeys), or name another with REPO_KEY; a new key would need a new keyring on every speaker"
  } >&2
  exit 2
fi
key=$usable
if [ -z "$key" ]; then
  echo "repo: no signing key in $GNUPGHOME; making one (ed25519, no passphrase, no expiry)" >&2
  gpg --batch --quiet --passphrase '' --quick-gen-key "agenthost archive <archive@agenthost.invalid>" ed25519 sign never
  key=$(gpg --batch --with-colons --list-secret-keys | awk -F: '$1 == "sec" {print $5; exit}')
fi
fpr=$(gpg --batch --with-colons --list-keys "$key" | awk -F: '$1 == "fpr" {print $10; exit}')
[ -n "$fpr" ] || { echo "repo: key $key not found in $GNUPGHOME" >&2; exit 2; }

mkdir -p "$repo/conf"
{
  for suite in bookworm trixie; do
    cat <<EOF
Origin: $origin
Label: $origin
Suite: $suite
Codename: $suite
Architectures: amd64 arm64 armhf
Components: main
Description: agenthost, the voice speaker plugin host, for Debian $suite and Raspberry Pi OS $suite
SignWith: $fpr

EOF
  done
} > "$repo/conf/distributions"
printf 'verbose\nbasedir .\n' > "$repo/conf/options"

for deb in "$@"; do
  version=$(dpkg-deb -f "$deb" Version)
  case $version in
    *~deb12u*) suite=bookworm ;;
    *~deb13u*) suite=trixie ;;
    *) echo "repo: $deb: version $version names no suite (~deb12u1 or ~deb13u1)" >&2; exit 2 ;;
  esac
  # includedeb replaces an older version of the package in that suite and architecture.
  reprepro -b "$repo" --silent includedeb "$suite" "$deb"
  echo "repo: $suite: $(dpkg-deb -f "$deb" Package) $version $(dpkg-deb -f "$deb" Architecture)" >&2
done
reprepro -b "$repo" --silent export
reprepro -b "$repo" --silent deleteunreferenced
gpg --batch --yes --export "$fpr" > "$repo/agenthost-archive-keyring.gpg"
gpg --batch --yes --armor --export "$fpr" > "$repo/agenthost-archive-keyring.asc"
echo "repo: $repo signed by $fpr" >&2
