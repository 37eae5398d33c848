#!/usr/bin/env bash
# What the speaker's mixer does to the music, as it happens (scripts/demo.sh
# --music): reads `agenthost status` documents, one after another, on stdin,
# and says each time the assistant starts or stops listening and what that
# did to the music, with the output of the status that showed it.
#
# Usage: while sleep 0.2; do agenthost status; done | scripts/music-watch.sh
#        scripts/music-watch.sh --follow PID CMD...
#   --follow: runs CMD (agenthost status) every 0.2 s itself while the process
#   PID (the daemon) lives, and ends when it is gone.
set -euo pipefail
if [ "${1:-}" = --follow ]; then
  pid=$2; shift 2
  exec < <(while sleep 0.2 && kill -0 "$pid" 2>/dev/null; do "$@" 2>/dev/null || true; done)
fi
exec python3 -u -c '
import json, sys, time

def music(out):
    """What the mixer does to the media streams: ducked, paused, loud or none."""
    media = [s for s in out.get("streams") or [] if s.get("class") == "media"]
    if not media:
        return "none"
    for how in ("paused", "ducked"):
        if any(s.get(how) for s in media):
            return how
    return "loud"

dec, buf, was = json.JSONDecoder(), "", None
for line in sys.stdin:
    buf += line
    while True:
        buf = buf.lstrip()
        try:
            st, end = dec.raw_decode(buf)
        except ValueError:
            break
        buf = buf[end:]
        out = st.get("output") or {}
        now = (out.get("assistant_active", False), music(out))
        if now == was or (was is None and not now[0]):
            was = now
            continue
        t = time.strftime("%H:%M:%S")
        active, m = now
        if was is not None and active == was[0]:
            # The music changed with no turn starting or ending.
            if m == "loud":
                print("== %s music %s" % (t, "plays" if was[1] == "none" else "loud again"))
            elif m != "none":
                print("== %s music %s%s" % (t, m, "" if active else " (an announcement or a ring plays)"))
        elif active and m == "none":
            print("== %s the assistant is listening: no music plays" % t)
        elif active:
            print("== %s the assistant is listening: music %s (ducks so far: %d)" % (t, "still loud" if m == "loud" else m, out.get("ducks", 0)))
        elif m == "none":
            print("== %s the turn is over" % t)
        else:
            again = "loud again" if m == "loud" else "still " + m + " (an announcement or a ring plays)"
            print("== %s the turn and its reply are over: music %s; the output:" % (t, again))
            print(json.dumps(out, indent=2))
        was = now
'
