// webrtc13: runs trixie's WebRTC audio processing 1.3 (AEC3) over raw
// 16 kHz s16le files, 10 ms frames: webrtc13 FAR MIC OUT. The environment
// sets NS=1 (noise suppression on) and HPF=1 (high-pass filter on).
// Only for the comparison in test/aeccompare; not shipped.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <modules/audio_processing/include/audio_processing.h>

static std::vector<int16_t> readRaw(const char *p) {
  std::vector<int16_t> v;
  FILE *f = fopen(p, "rb");
  if (!f) { perror(p); exit(1); }
  int16_t b[4096]; size_t n;
  while ((n = fread(b, 2, 4096, f)) > 0) v.insert(v.end(), b, b + n);
  fclose(f);
  return v;
}

int main(int argc, char **argv) {
  if (argc < 4) { fprintf(stderr, "usage: [NS=1] [HPF=1] webrtc13 FAR MIC OUT\n"); return 2; }
  auto far = readRaw(argv[1]), mic = readRaw(argv[2]);
  bool ns = getenv("NS") != nullptr;
  webrtc::AudioProcessing *apm = webrtc::AudioProcessingBuilder().Create();
  webrtc::AudioProcessing::Config c;
  c.echo_canceller.enabled = true;
  c.echo_canceller.mobile_mode = false;
  c.high_pass_filter.enabled = getenv("HPF") != nullptr;
  c.noise_suppression.enabled = ns;
  c.noise_suppression.level = webrtc::AudioProcessing::Config::NoiseSuppression::kModerate;
  apm->ApplyConfig(c);
  webrtc::StreamConfig sc(16000, 1);
  FILE *o = fopen(argv[3], "wb");
  int16_t ff[160], nf[160], out[160];
  for (size_t i = 0; i + 160 <= mic.size(); i += 160) {
    for (int k = 0; k < 160; k++) ff[k] = i + k < far.size() ? far[i + k] : 0;
    memcpy(nf, &mic[i], 320);
    if (apm->ProcessReverseStream(ff, sc, sc, ff) != 0) { fprintf(stderr, "reverse failed\n"); return 1; }
    apm->set_stream_delay_ms(0);
    if (apm->ProcessStream(nf, sc, sc, out) != 0) { fprintf(stderr, "process failed\n"); return 1; }
    fwrite(out, 2, 160, o);
  }
  fclose(o);
  delete apm;
  return 0;
}
