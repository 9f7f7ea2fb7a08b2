#include "core/wav.h"

#include <sndfile.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/error.h"

namespace rtf {

WavWriter::WavWriter(const std::string &path, int sample_rate, int channels, WavFormat format)
    : path_(path), channels_(channels), format_(format) {
    if (sample_rate <= 0 || channels <= 0) {
        throw_usage("WAV " + path + ": invalid sample rate " + std::to_string(sample_rate) +
                    " or channel count " + std::to_string(channels));
    }
    SF_INFO info{};
    info.samplerate = sample_rate;
    info.channels = channels;
    info.format = SF_FORMAT_WAV | (format == WavFormat::Pcm16 ? SF_FORMAT_PCM_16 : SF_FORMAT_FLOAT);
    SNDFILE *f = sf_open(path.c_str(), SFM_WRITE, &info);
    if (!f) throw_setup("cannot create WAV file " + path + ": " + sf_strerror(nullptr));
    // Keep the header true after every write: an interrupted run still leaves a valid file.
    sf_command(f, SFC_SET_UPDATE_HEADER_AUTO, nullptr, SF_TRUE);
    sf_command(f, SFC_SET_CLIPPING, nullptr, SF_TRUE);
    file_ = f;
}

WavWriter::~WavWriter() { close(); }

void WavWriter::write(const float *samples, size_t n_samples) {
    if (!file_) throw_runtime("WAV " + path_ + ": write after close");
    if (n_samples == 0) return;
    sf_count_t n = 0;
    if (format_ == WavFormat::Pcm16) {
        std::vector<short> s16(n_samples);
        for (size_t i = 0; i < n_samples; ++i) s16[i] = to_s16(samples[i]);
        n = sf_write_short(static_cast<SNDFILE *>(file_), s16.data(), static_cast<sf_count_t>(n_samples));
    } else {
        n = sf_write_float(static_cast<SNDFILE *>(file_), samples, static_cast<sf_count_t>(n_samples));
    }
    if (n != static_cast<sf_count_t>(n_samples)) {
        throw_runtime("WAV " + path_ + ": short write (" + std::to_string(n) + " of " +
                      std::to_string(n_samples) + " samples): " + sf_strerror(static_cast<SNDFILE *>(file_)));
    }
    frames_ += static_cast<int64_t>(n_samples) / channels_;
}

void WavWriter::close() {
    if (file_) {
        sf_close(static_cast<SNDFILE *>(file_));
        file_ = nullptr;
    }
}

std::vector<float> WavData::mono() const {
    if (channels <= 1) return samples;
    std::vector<float> out(static_cast<size_t>(frames));
    for (int64_t i = 0; i < frames; ++i) {
        float acc = 0;
        for (int c = 0; c < channels; ++c) acc += samples[static_cast<size_t>(i * channels + c)];
        out[static_cast<size_t>(i)] = acc / static_cast<float>(channels);
    }
    return out;
}

WavData read_wav(const std::string &path) {
    SF_INFO info{};
    SNDFILE *f = sf_open(path.c_str(), SFM_READ, &info);
    if (!f) throw_usage("cannot read audio file " + path + ": " + sf_strerror(nullptr));
    WavData d;
    d.sample_rate = info.samplerate;
    d.channels = info.channels;
    SF_FORMAT_INFO fi{};
    fi.format = info.format & SF_FORMAT_TYPEMASK;
    sf_command(f, SFC_GET_FORMAT_INFO, &fi, sizeof(fi));
    SF_FORMAT_INFO si{};
    si.format = info.format & SF_FORMAT_SUBMASK;
    sf_command(f, SFC_GET_FORMAT_INFO, &si, sizeof(si));
    d.format = std::string(fi.name ? fi.name : "?") + " " + (si.name ? si.name : "?");
    if (info.channels <= 0 || info.samplerate <= 0 || info.frames < 0) {
        sf_close(f);
        throw_usage("audio file " + path + " has an invalid header");
    }
    // Guard against absurd frame counts from damaged headers before allocating.
    const sf_count_t max_frames = sf_count_t(1) << 31;
    if (info.frames == SF_COUNT_MAX) {
        // A length the header leaves open (a streamed FLAC, core/audio-stream.h): read to the
        // end in blocks, bounded as a stated length is.
        std::vector<float> block(static_cast<size_t>(65536 * info.channels));
        sf_count_t got = 0;
        while ((got = sf_readf_float(f, block.data(), 65536)) > 0) {
            d.samples.insert(d.samples.end(), block.begin(), block.begin() + got * info.channels);
            if (static_cast<sf_count_t>(d.samples.size()) > max_frames) {
                sf_close(f);
                throw_usage("audio file " + path + " holds more than " + std::to_string(max_frames) + " samples; too large");
            }
        }
        sf_close(f);
        d.frames = static_cast<int64_t>(d.samples.size()) / info.channels;
        return d;
    }
    if (info.frames > max_frames / info.channels) {
        sf_close(f);
        throw_usage("audio file " + path + " claims " + std::to_string(info.frames) + " frames; too large");
    }
    d.samples.resize(static_cast<size_t>(info.frames * info.channels));
    sf_count_t got = sf_readf_float(f, d.samples.data(), info.frames);
    sf_close(f);
    d.frames = got;
    d.samples.resize(static_cast<size_t>(got * info.channels));
    return d;
}

void write_wav(const std::string &path, const std::vector<float> &mono, int sample_rate, WavFormat format) {
    WavWriter w(path, sample_rate, 1, format);
    w.write(mono);
    w.close();
}

int16_t to_s16(float x) {
    const float v = std::isfinite(x) ? std::max(-1.0f, std::min(1.0f, x)) : 0.0f;
    return static_cast<int16_t>(std::lrint(v * 32767.0f));
}

std::string to_s16le(const float *samples, size_t n_samples) {
    std::string out(n_samples * 2, '\0');
    for (size_t i = 0; i < n_samples; ++i) {
        const auto s = static_cast<uint16_t>(to_s16(samples[i]));
        out[2 * i] = static_cast<char>(s & 0xff);
        out[2 * i + 1] = static_cast<char>(s >> 8);
    }
    return out;
}

std::string wav_stream_header(int sample_rate, int channels) {
    std::string h;
    auto u32 = [&](uint32_t v) { for (int b = 0; b < 4; ++b) h.push_back(static_cast<char>((v >> (8 * b)) & 0xff)); };
    auto u16 = [&](uint16_t v) { for (int b = 0; b < 2; ++b) h.push_back(static_cast<char>((v >> (8 * b)) & 0xff)); };
    h += "RIFF";
    u32(0xFFFFFFFFu);
    h += "WAVEfmt ";
    u32(16);
    u16(1);  // PCM
    u16(static_cast<uint16_t>(channels));
    u32(static_cast<uint32_t>(sample_rate));
    u32(static_cast<uint32_t>(sample_rate * channels * 2));
    u16(static_cast<uint16_t>(channels * 2));
    u16(16);
    h += "data";
    u32(0xFFFFFFFFu);
    return h;
}

}  // namespace rtf
