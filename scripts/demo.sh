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
# Runs until Ctrl-C (or for DEMO_SECONDS seconds).
# Usage: scripts/demo.sh [--audio file|portaudio|echo-room|none] [--echo-room] [extra `agenthost run` flags]
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
wake=0 rest=()
for a in "$@"; do if [ "$a" = --wake ]; then wake=1; else rest+=("$a"); fi; done
set -- "${rest[@]+"${rest[@]}"}"
if [ "$wake" = 1 ]; then
  wakedir=$(scripts/fetch-wakeword.sh --dest "${XDG_CACHE_HOME:-$HOME/.cache}/agenthost/wakeword")
  go build -o bin/agenthost-wakeword ./cmd/agenthost-wakeword   # beside bin/agenthost, where the host looks
  espeak-ng -v en-gb -s 140 -w run/wake-raw.wav "hey jarvis"
  espeak-ng -v en-gb -s 150 -w run/command-raw.wav "what time is it?"
  sox run/wake-raw.wav -r 16000 -c 1 -b 16 -e signed-integer run/wake-16k.wav
  sox run/command-raw.wav -r 16000 -c 1 -b 16 -e signed-integer run/command-16k.wav
  sox run/wake-16k.wav run/command-16k.wav run/wake.wav pad 1 6   # the phrase, the command in the same breath
  audio_flags+=(--set conversation.wake_word.models=hey_jarvis --set "conversation.wake_word.dir=$wakedir"
    --set audio.input_file=run/wake.wav --set audio.echo_room.speech=run/wake.wav)
  echo "== wake word on: say (or the demo's microphone says) \"hey jarvis\", then the question" >&2
fi

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ "$audio" = file ] && [ -f run/reply.wav ]; then
    echo "== the spoken replies: $(soxi -D run/reply.wav 2>/dev/null || echo '?') s of audio in run/reply.wav"
  fi
}
at_exit cleanup

tail -f /dev/null | bin/voicesim --listen 127.0.0.1:8009 "${sim_flags[@]}" 2> >(sed -u 's/^/[voicesim] /' >&2) &
pids+=($!)
sleep 0.3
bin/agenthost run --config examples/demo.yaml --set "plugins.config.files.root=$PWD/run/files" "${audio_flags[@]}" "$@" 2> >(sed -u 's/^/[agenthost] /' >&2) &
pids+=($!)

ah() { bin/agenthost "$1" --config examples/demo.yaml "${@:2}"; }
for _ in $(seq 50); do ah status >/dev/null 2>&1 && break; sleep 0.2; done
echo "== the host is up; services it lends the server:"
ah status
echo "== a text turn: the simulator asks the host's get_current_time and speaks the answer"
ah say "What time is it?"
sleep 1.5
echo "== a call through the same dispatch as the server's:"
ah call get_current_time '{"format":"detailed"}' || true
echo "== running; Ctrl-C stops both (try: bin/agenthost say --config examples/demo.yaml 'hello')"
if [ "$audio" = file ]; then
  echo "== voice turns: run/question.wav is the microphone (the simulator's VAD ends each turn); replies go to run/reply.wav"
fi
if [ "$audio" = echo-room ]; then
  echo "== the echo room: a question every 15 s; each reply echoes back into the microphone 10 dB down, and the"
  echo "   canceller removes it (the first ~2 s of sound are held down while it learns the room). A barge-in would"
  echo "   show as 'playback flushed (barge-in)' in the host's log."
fi
if [ -n "${DEMO_SECONDS:-}" ]; then sleep "$DEMO_SECONDS"; else wait "${pids[1]}"; fi

