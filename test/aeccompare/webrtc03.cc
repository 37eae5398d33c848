// webrtc03: runs bookworm's WebRTC audio processing 0.3 (AEC2) over raw
// 16 kHz s16le files, 10 ms frames: webrtc03 FAR MIC OUT. The environment
// sets LEVEL=low|moderate|high (echo suppression, default moderate) and
// NS=1 (noise suppression on). Only for the comparison in test/aeccompare; not shipped.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <webrtc/modules/audio_processing/include/audio_processing.h>
#include <webrtc/modules/interface/module_common_types.h>

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
  if (argc < 4) { fprintf(stderr, "usage: [LEVEL=low|moderate|high] [NS=1] webrtc03 FAR MIC OUT\n"); return 2; }
  auto far = readRaw(argv[1]), mic = readRaw(argv[2]);
  bool ns = getenv("NS") != nullptr;
  const char *lvl = getenv("LEVEL") ? getenv("LEVEL") : "moderate";
  webrtc::Config cfg;
  cfg.Set<webrtc::ExtendedFilter>(new webrtc::ExtendedFilter(true));
  cfg.Set<webrtc::DelayAgnostic>(new webrtc::DelayAgnostic(true));
  webrtc::AudioProcessing *apm = webrtc::AudioProcessing::Create(cfg);
  apm->echo_cancellation()->enable_drift_compensation(false);
  apm->echo_cancellation()->set_suppression_level(
      !strcmp(lvl, "low") ? webrtc::EchoCancellation::kLowSuppression
      : !strcmp(lvl, "high") ? webrtc::EchoCancellation::kHighSuppression
                             : webrtc::EchoCancellation::kModerateSuppression);
  apm->echo_cancellation()->Enable(true);
  if (ns) { apm->noise_suppression()->set_level(webrtc::NoiseSuppression::kModerate); apm->noise_suppression()->Enable(true); }
  FILE *o = fopen(argv[3], "wb");
  webrtc::AudioFrame ff, nf;
  for (size_t i = 0; i + 160 <= mic.size(); i += 160) {
    ff.sample_rate_hz_ = nf.sample_rate_hz_ = 16000;
    ff.num_channels_ = nf.num_channels_ = 1;
    ff.samples_per_channel_ = nf.samples_per_channel_ = 160;
    for (int k = 0; k < 160; k++) ff.data_[k] = i + k < far.size() ? far[i + k] : 0;
    memcpy(nf.data_, &mic[i], 320);
    if (apm->ProcessReverseStream(&ff) != 0) { fprintf(stderr, "reverse failed\n"); return 1; }
    apm->set_stream_delay_ms(0);
    if (apm->ProcessStream(&nf) != 0) { fprintf(stderr, "process failed\n"); return 1; }
    fwrite(nf.data_, 2, 160, o);
  }
  fclose(o);
  delete apm;
  return 0;
}
