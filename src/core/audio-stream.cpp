#include "core/audio-stream.h"

#include <sndfile.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "core/error.h"
#include "core/wav.h"

namespace rtf {

namespace {

struct FormatInfo {
    AudioFormat format;
    const char *name;
    const char *content_type;
    int sf_format;  // 0: written by us (WAV streaming header, raw PCM)
};

constexpr FormatInfo kFormats[] = {
    {AudioFormat::Wav, "wav", "audio/wav", 0},
    {AudioFormat::Pcm, "pcm", "audio/pcm", 0},
    {AudioFormat::Flac, "flac", "audio/flac", SF_FORMAT_FLAC | SF_FORMAT_PCM_16},
    {AudioFormat::Opus, "opus", "audio/ogg", SF_FORMAT_OGG | SF_FORMAT_OPUS},
    {AudioFormat::Mp3, "mp3", "audio/mpeg", SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III},
};

const FormatInfo &info_of(AudioFormat f) {
    for (const auto &i : kFormats)
        if (i.format == f) return i;
    return kFormats[0];
}

bool sndfile_can_write(int sf_format, int sample_rate) {
    SF_INFO si{};
    si.samplerate = sample_rate;
    si.channels = 1;
    si.format = sf_format;
    return sf_format_check(&si) != 0;
}

}  // namespace

// What libsndfile writes, as bytes still to send. Bytes before `base` were handed out
// already: a write there (a header patched at the end) is dropped.
struct AudioStreamEncoder::Sink {
    std::string pending;   // bytes from offset base on
    sf_count_t base = 0;  // stream offset of pending[0]
    sf_count_t pos = 0;    // libsndfile's file position
    sf_count_t len = 0;    // the stream's length so far

    sf_count_t write(const void *p, sf_count_t n) {
        const auto *b = static_cast<const char *>(p);
        sf_count_t from = pos, to = pos + n;
        pos = to;
        len = std::max(len, to);
        if (to <= base) return n;  // all of it already sent
        if (from < base) {
            b += base - from;
            from = base;
        }
        const size_t off = static_cast<size_t>(from - base);
        if (pending.size() < off + static_cast<size_t>(to - from)) pending.resize(off + static_cast<size_t>(to - from), '\0');
        std::memcpy(pending.data() + off, b, static_cast<size_t>(to - from));
        return n;
    }
    // MP3: LAME starts the stream with a Xing/Info frame that it fills in at the end (written
    // as zeros until then). A stream cannot be patched: left in, it is a frame of no audio
    // whose bitrate readers take for the stream's (libsndfile's reader stopped after 0.8 s of
    // 3 s). So that frame is left out, as ffmpeg leaves it out of an unseekable output, and
    // the encoder runs at a constant bitrate, so any reader estimates the length right.
    bool strip_xing = false;

    std::string take() {
        if (strip_xing) {
            const size_t n = xing_frame_size();
            if (n == SIZE_MAX) return {};  // the first frame is not complete yet: hold it
            strip_xing = false;
            if (n > 0) {
                pending.erase(0, n);
                base += static_cast<sf_count_t>(n);
            }
        }
        std::string out;
        out.swap(pending);
        base += static_cast<sf_count_t>(out.size());
        return out;
    }

    // Bytes of the leading Xing/Info frame, 0 when the stream does not start with one,
    // SIZE_MAX when more bytes are needed to tell.
    size_t xing_frame_size() const {
        if (pending.size() < 4) return SIZE_MAX;
        const auto *h = reinterpret_cast<const unsigned char *>(pending.data());
        if (h[0] != 0xff || (h[1] & 0xe0) != 0xe0 || ((h[1] >> 1) & 3) != 1) return 0;  // not a layer III frame
        const int version = (h[1] >> 3) & 3;  // 3 = MPEG-1, 2 = MPEG-2, 0 = MPEG-2.5
        const int br_idx = h[2] >> 4, sr_idx = (h[2] >> 2) & 3, pad = (h[2] >> 1) & 1;
        static const int kBr1[] = {0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320};
        static const int kBr2[] = {0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160};
        static const int kSr[] = {44100, 48000, 32000};
        if (version == 1 || br_idx == 0 || br_idx == 15 || sr_idx == 3) return 0;
        const int sr = kSr[sr_idx] / (version == 3 ? 1 : version == 2 ? 2 : 4);
        const size_t size = version == 3 ? static_cast<size_t>(144000 * kBr1[br_idx] / sr + pad)
                                         : static_cast<size_t>(72000 * kBr2[br_idx] / sr + pad);
        if (pending.size() < size) return SIZE_MAX;
        // libsndfile 1.2 writes the tag frame as zeros after the header and fills it at the end.
        const std::string_view body(pending.data() + 4, size - 4);
        const bool zeros = body.find_first_not_of('\0') == std::string_view::npos;
        const bool tag = body.find("Xing") != std::string_view::npos || body.find("Info") != std::string_view::npos;
        return zeros || tag ? size : 0;
    }

    static sf_count_t v_len(void *u) { return static_cast<Sink *>(u)->len; }
    static sf_count_t v_seek(sf_count_t off, int whence, void *u) {
        auto *s = static_cast<Sink *>(u);
        const sf_count_t p = whence == SEEK_SET ? off : whence == SEEK_CUR ? s->pos + off : s->len + off;
        if (p < 0) return -1;
        s->pos = p;
        return p;
    }
    static sf_count_t v_read(void *, sf_count_t, void *) { return 0; }  // a stream is not read back
    static sf_count_t v_write(const void *p, sf_count_t n, void *u) { return static_cast<Sink *>(u)->write(p, n); }
    static sf_count_t v_tell(void *u) { return static_cast<Sink *>(u)->pos; }
};

AudioFormat parse_audio_format(const std::string &name, const std::string &what) {
    for (const auto &i : kFormats)
        if (name == i.name) return i.format;
    std::string all;
    for (const auto &n : audio_format_names()) all += (all.empty() ? "" : ", ") + n;
    throw_usage(what + " '" + name + "': use one of " + all);
}

const char *to_string(AudioFormat f) { return info_of(f).name; }
const char *content_type(AudioFormat f) { return info_of(f).content_type; }

std::vector<std::string> audio_format_names() {
    std::vector<std::string> v;
    for (const auto &i : kFormats)
        if (i.sf_format == 0 || sndfile_can_write(i.sf_format, 24000)) v.emplace_back(i.name);
    return v;
}

AudioStreamEncoder::AudioStreamEncoder(AudioFormat format, int sample_rate)
    : format_(format), sample_rate_(sample_rate), sink_(std::make_unique<Sink>()) {
    if (sample_rate <= 0) throw_usage("audio stream: sample rate " + std::to_string(sample_rate) + " Hz");
    const FormatInfo &fi = info_of(format);
    if (fi.sf_format == 0) return;
    if (format == AudioFormat::Opus && sample_rate != 8000 && sample_rate != 12000 && sample_rate != 16000 &&
        sample_rate != 24000 && sample_rate != 48000)
        throw_usage("opus: " + std::to_string(sample_rate) + " Hz; Opus takes 8, 12, 16, 24 or 48 kHz");
    SF_INFO si{};
    si.samplerate = sample_rate;
    si.channels = 1;
    si.format = fi.sf_format;
    if (!sf_format_check(&si))
        throw_setup(std::string(fi.name) + ": this build's libsndfile (" + sf_version_string() + ") cannot write it");
    sink_->strip_xing = format == AudioFormat::Mp3;
    SF_VIRTUAL_IO io{Sink::v_len, Sink::v_seek, Sink::v_read, Sink::v_write, Sink::v_tell};
    SNDFILE *f = sf_open_virtual(&io, SFM_WRITE, &si, sink_.get());
    if (!f) throw_setup(std::string(fi.name) + " encoder: " + sf_strerror(nullptr));
    file_ = f;
    if (format == AudioFormat::Mp3) {
        int mode = SF_BITRATE_MODE_CONSTANT;
        sf_command(f, SFC_SET_BITRATE_MODE, &mode, sizeof mode);
    }
}

AudioStreamEncoder::~AudioStreamEncoder() {
    if (file_) sf_close(static_cast<SNDFILE *>(file_));
}

std::string AudioStreamEncoder::begin() {
    if (format_ == AudioFormat::Wav) return wav_stream_header(sample_rate_, 1);
    return {};
}

std::string AudioStreamEncoder::encode(const float *pcm, size_t n) {
    if (finished_) throw_runtime(std::string(to_string(format_)) + " stream: encode after finish");
    samples_ += static_cast<int64_t>(n);
    if (!file_) return to_s16le(pcm, n);  // wav (after its header) and pcm: the same s16le samples
    auto *f = static_cast<SNDFILE *>(file_);
    if (format_ == AudioFormat::Flac) {
        // Lossless: the samples of a WAV of the same run (to_s16), not libsndfile's own conversion.
        std::vector<short> s(n);
        for (size_t i = 0; i < n; ++i) s[i] = to_s16(pcm[i]);
        if (sf_write_short(f, s.data(), static_cast<sf_count_t>(n)) != static_cast<sf_count_t>(n))
            throw_runtime(std::string("flac encoder: ") + sf_strerror(f));
    } else {
        std::vector<float> c(n);
        for (size_t i = 0; i < n; ++i) c[i] = std::isfinite(pcm[i]) ? std::clamp(pcm[i], -1.0f, 1.0f) : 0.0f;
        if (sf_write_float(f, c.data(), static_cast<sf_count_t>(n)) != static_cast<sf_count_t>(n))
            throw_runtime(std::string(to_string(format_)) + " encoder: " + sf_strerror(f));
    }
    sf_write_sync(f);
    return sink_->take();
}

std::string AudioStreamEncoder::finish() {
    if (finished_) return {};
    finished_ = true;
    if (!file_) return {};
    sf_close(static_cast<SNDFILE *>(file_));
    file_ = nullptr;
    return sink_->take();
}

}  // namespace rtf
