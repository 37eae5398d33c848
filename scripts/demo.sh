#!/usr/bin/env bash
# The main job, on any Debian / Raspberry Pi OS machine: builds agenthost, the
# simulator and the bundled plugins, starts the simulated voice server and the
# host against it, and holds a conversation turn that uses a plugin.
# Audio: without a sound card (the default, --audio file) a spoken question is read
# from a WAV file in a loop and the replies are written to run/reply.wav; with
# --audio portaudio the real microphone and speaker are used; --audio none: text only;
# --echo-room (or --audio echo-room): a simulated room in which the speaker's replies
# come back into the microphone, a person asks a question every 15 s, and the echo
# canceller and noise suppressor keep the host from interrupting itself (add
# --set audio.echo_room.interrupt=run/stop.wav to hear a barge-in in every reply).
# --music: music plays through the speaker's mixer (the media plugin, from a
# loopback HTTP server) and each wake-word turn ducks (or pauses) it (--wake is implied).
# The simulator listens on a free port (DEMO_SERVER_PORT chooses one); the
# demo's speaker keeps its state (volume, mute, timers, the files plugin's
# folder) in run/state. The microphone is off for the text turn, so that its
# reply is heard whole, and on from then. Ctrl-C (or the end) stops the host,
# then the simulator.
# Runs until Ctrl-C (or for DEMO_SECONDS seconds).
# Usage: scripts/demo.sh [--audio file|portaudio|echo-room|none] [--echo-room] [--wake] [--music] [extra `agenthost run` flags]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
source scripts/at-exit.sh

mkdir -p bin/plugins run/files
go build -o bin/agenthost ./cmd/agenthost
go build -o bin/voicesim ./cmd/voicesim
for p in plugins/*/; do
  name=$(basename "$p")
  [ -f "$p/main.go" ] || continue
  go build -o "bin/plugins/.$name.tmp" "./$p" && mv "bin/plugins/.$name.tmp" "bin/plugins/$name"   # install = build, then rename
done

audio=file
if [ "${1:-}" = "--audio" ]; then audio=$2; shift 2; fi
if [ "${1:-}" = "--echo-room" ]; then audio=echo-room; shift; fi
sim_flags=()
case "$audio" in
  file)
    espeak-ng -w run/question-raw.wav "What time is it?"
    sox run/question-raw.wav -r 16000 -c 1 -b 16 -e signed-integer run/question.wav pad 0.5 4
    rm -f run/reply.wav
    audio_flags=(--set audio.backend=file --set audio.input_file=run/question.wav --set audio.output_file=run/reply.wav --set server.params.mode=vad) ;;
  portaudio) audio_flags=(--set audio.backend=portaudio --set server.params.mode=vad) ;;
  echo-room|echo_room)
    audio=echo-room
    espeak-ng -w run/question-raw.wav "What time is it?"
    sox run/question-raw.wav -r 16000 -c 1 -b 16 -e signed-integer run/question.wav
    espeak-ng -v en-gb+f3 -w run/stop-raw.wav "Stop."
    sox run/stop-raw.wav -r 16000 -c 1 -b 16 -e signed-integer run/stop.wav
    espeak-ng -w run/reply-raw.wav "Here is the weather for today. It will be sunny and mild, with a light breeze from the west."
    sox run/reply-raw.wav -r 16000 -c 1 -b 16 -e signed-integer -t raw run/reply.s16
    sim_flags=(--reply-pcm run/reply.s16)
    audio_flags=(--set audio.backend=echo_room --set server.params.mode=vad --set conversation.aec=true
      --set audio.capture.echo_cancel=true --set audio.capture.noise_suppression=true
      --set audio.echo_room.speech=run/question.wav --set audio.echo_room.speech_at=8s --set audio.echo_room.speech_every=15s) ;;
  none) audio_flags=() ;;
  *) echo "demo: --audio takes file, portaudio, echo-room or none" >&2; exit 2 ;;
esac

# --wake (anywhere among the arguments): the wake word. The microphone says
# "hey jarvis, what time is it?" (the file in a loop, or the echo room's
# person), and nothing is sent to the server before the phrase; after the
# reply the speaker waits for the phrase again. The models (openWakeWord's,
# CC BY-NC-SA 4.0: non-commercial use) and, on bookworm, ONNX Runtime are
# fetched once into ~/.cache/agenthost/wakeword by scripts/fetch-wakeword.sh.
# --music (anywhere among the arguments): music made here (sox chords, lame
# MP3), served on 127.0.0.1:${DEMO_MUSIC_PORT:-8010} and played with `agenthost
# play`; the wake word is on, since a speaker that listens all the time (VAD
# without it) would keep the music ducked all the time.
wake=0 music=0 rest=()
for a in "$@"; do
  case $a in --wake) wake=1 ;; --music) music=1 wake=1 ;; *) rest+=("$a") ;; esac
done
set -- "${rest[@]+"${rest[@]}"}"
if [ "$music" = 1 ] && [ "$audio" = none ]; then echo "demo: --music needs a speaker (--audio file, portaudio or echo-room)" >&2; exit 2; fi
if [ "$wake" = 1 ]; then
  wakedir=$(scripts/fetch-wakeword.sh --dest "${XDG_CACHE_HOME:-$HOME/.cache}/agenthost/wakeword")
  go build -o bin/agenthost-wakeword ./cmd/agenthost-wakeword   # beside bin/agenthost, where the host looks
  espeak-ng -v en-gb -s 140 -w run/wake-raw.wav "hey jarvis"
  espeak-ng -v en-gb -s 150 -w run/command-raw.wav "what time is it?"
  sox run/wake-raw.wav -r 16000 -c 1 -b 16 -e signed-integer run/wake-16k.wav
  sox run/command-raw.wav -r 16000 -c 1 -b 16 -e signed-integer run/command-16k.wav
  sox run/wake-16k.wav run/command-16k.wav run/wake.wav pad 1 6   # the phrase, the command in the same breath
  audio_flags+=(--set conversation.wake_word.models=hey_jarvis_agenthost --set "conversation.wake_word.dir=$wakedir"
    --set audio.input_file=run/wake.wav --set audio.echo_room.speech=run/wake.wav)
  echo "== wake word on: say (or the demo's microphone says) \"hey jarvis\", then the question" >&2
fi

if [ "$music" = 1 ]; then
  # Four plucked chords, half a second each, then the bar again: two minutes, -15 dBFS at the peaks.
  mkdir -p run/music
  bar=()
  for chord in "C3 E3 G3" "A2 C3 E3" "F2 A2 C3" "G2 B2 D3"; do
    set -f; notes=($chord); set +f
    for beat in 1 2; do
      f=run/music/bar-${#bar[@]}.wav
      sox -r 44100 -c 3 -n -b 16 -c 2 "$f" synth 0.5 pluck "${notes[0]}" pluck "${notes[1]}" pluck "${notes[2]}" remix -
      bar+=("$f")
    done
  done
  sox "${bar[@]}" run/music/music.wav gain -n -15 repeat 29
  lame --quiet -b 128 run/music/music.wav run/music/music.mp3
  rm -f "${bar[@]}" run/music/music.wav
fi

pids=()
host_pid=
cleanup() {
  if [ -n "${monitor_pid:-}" ]; then kill "$monitor_pid" 2>/dev/null || true; fi
  if [ "$music" = 1 ] && [ -n "$host_pid" ]; then
    echo "== the speaker's output at the end (played_s: seconds of each class of sound; ducks: times the music went down):"
    output_status || true
  fi
  # The host first: it says goodbye to a simulator that still answers (the
  # other way round, its turn in progress failed with a WARN).
  if [ -n "$host_pid" ]; then kill "$host_pid" 2>/dev/null || true; wait "$host_pid" 2>/dev/null || true; fi
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ "$audio" = file ] && [ -f run/reply.wav ]; then
    echo "== the speaker's sound: $(soxi -D run/reply.wav 2>/dev/null || echo '?') s of audio in run/reply.wav"
  fi
}
at_exit cleanup

rm -f run/voicesim.out run/agenthost.log
# In a session of its own: Ctrl-C reaches the host alone, and the cleanup
# stops the simulator after it.
# The log filters ignore Ctrl-C (trap '' INT, kept across exec): they end
# when what they read ends, and keep the host's and the simulator's last lines.
tail -f /dev/null | setsid bin/voicesim --listen "127.0.0.1:${DEMO_SERVER_PORT:-0}" "${sim_flags[@]}" \
  > >(trap '' INT; exec tee run/voicesim.out) 2> >(trap '' INT; exec sed -u 's/^/[voicesim] /' >&2) &
pids+=($!)
server=
for _ in $(seq 300); do
  # (|| true: until the tee behind the simulator's output has started, the
  # file is not there, sed exits 2, and set -e would end the demo.)
  server=$(sed -n 's/^voicesim listening on \([^ ]*\).*/\1/p' run/voicesim.out 2>/dev/null || true)
  [ -n "$server" ] && break
  sleep 0.1
done
[ -n "$server" ] || { echo "demo: the simulator did not start (port ${DEMO_SERVER_PORT:-0} taken? set DEMO_SERVER_PORT)" >&2; exit 1; }
# The demo speaker's state, the microphone off until the text turn is over.
mkdir -p -m 700 run/state run/state/device
(umask 077; printf '{"version": 1, "volume": 70, "speaker_muted": false, "microphone_muted": true}\n' > run/state/device/state.json)
bin/agenthost run --config examples/demo.yaml --set "server.address=$server" --set "plugins.state_dir=$PWD/run/state" \
  "${audio_flags[@]}" "$@" 2> >(trap '' INT; tee run/agenthost.log | sed -u 's/^/[agenthost] /' >&2) &
host_pid=$!

ah() { bin/agenthost "$1" --config examples/demo.yaml "${@:2}"; }
output_status() { ah status | sed -n '/^  "output": {/,/^  }/p'; }
for _ in $(seq 50); do ah status >/dev/null 2>&1 && break; sleep 0.2; done
echo "== the host is up; services it lends the server:"
ah status
echo "== a text turn, the microphone off: the simulator asks the host's get_current_time and speaks the answer"
ended=$(grep -c 'msg="reply ended"' run/agenthost.log || true)
ah say --timeout 20s "What time is it?" || true   # prints the reply (and what the server called)
for _ in $(seq 150); do [ "$(grep -c 'msg="reply ended"' run/agenthost.log || true)" -gt "$ended" ] && break; sleep 0.1; done
ah mic on >/dev/null
echo "== a call through the same dispatch as the server's:"
ah call get_current_time '{"format":"detailed"}' || true
echo "== running; Ctrl-C stops both (try: bin/agenthost say --config examples/demo.yaml 'hello')"
if [ "$audio" = file ]; then
  if [ "$wake" = 1 ]; then mic=run/wake.wav; else mic=run/question.wav; fi
  echo "== voice turns: $mic is the microphone (the simulator's VAD ends each turn); the speaker's sound goes to run/reply.wav"
fi
if [ "$audio" = echo-room ]; then
  echo "== the echo room: a question every 15 s; each reply echoes back into the microphone 10 dB down, and the"
  echo "   canceller removes it (the first ~2 s of sound are held down while it learns the room). A barge-in would"
  echo "   show as 'playback flushed (barge-in)' in the host's log."
fi
if [ "$music" = 1 ]; then
  port=${DEMO_MUSIC_PORT:-8010}
  python3 -m http.server --bind 127.0.0.1 --directory run/music "$port" >/dev/null 2>&1 &
  pids+=($!)
  served=0
  for _ in $(seq 50); do curl -sfI "http://127.0.0.1:$port/music.mp3" >/dev/null 2>&1 && { served=1; break; }; sleep 0.1; done
  [ "$served" = 1 ] || { echo "demo: nothing serves run/music on 127.0.0.1:$port (port taken? set DEMO_MUSIC_PORT)" >&2; exit 1; }
  echo "== music: agenthost play http://127.0.0.1:$port/music.mp3 (the media plugin decodes it with ffmpeg)"
  ah play "http://127.0.0.1:$port/music.mp3"
  echo "== each wake-word turn ducks the music (audio.mix.duck_db; or pauses it: media_while_active) while the host listens and the reply plays over it"
  # What the mixer does, as it happens: the assistant's turns duck (or pause) the music, and it comes back.
  scripts/music-watch.sh --follow "$host_pid" bin/agenthost status --config examples/demo.yaml &
  monitor_pid=$!
fi
if [ -n "${DEMO_SECONDS:-}" ]; then sleep "$DEMO_SECONDS"; else wait "$host_pid"; fi

