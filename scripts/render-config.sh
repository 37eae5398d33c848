#!/usr/bin/env bash
# Writes the configuration the package and scripts/install.sh install as
# /etc/agenthost/agenthost.yaml: agenthost.example.yaml with the settings an
# installed service needs (the token from the systemd credential). Fails if
# the example no longer has the lines it edits.
# Usage: scripts/render-config.sh OUT
set -euo pipefail
cd "$(dirname "$0")/.."
perl -0pe '
  BEGIN { $n = 0 }
  $n += s{\A(# agenthost configuration: every key, with its default value\.\n)}{$1#\n# Installed by the agenthost package (or scripts/install.sh): your edits are\n# kept when it is upgraded (dpkg asks when both you and the package changed it).\n# After an edit: sudo systemctl reload agenthost (or restart).\n}m;
  $n += s{(\n  token_file: )""}{\n  # Installed: the systemd credential "token", which the unit loads from\n  # /etc/credstore/agenthost.token (mode 0600, root). No such file: no token.\n  token_file: \$CREDENTIALS_DIRECTORY/token};
  END { die "render-config: $n of 2 edits matched; agenthost.example.yaml changed?\n" if $n != 2 }
' agenthost.example.yaml > "$1"
