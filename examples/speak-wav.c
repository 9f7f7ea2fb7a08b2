/* speak-wav: speak one line to a WAV file with rtfkit's C API (include/rtf/rtf.h).
 *
 *   cmake --install build --prefix /opt/rtf
 *   export PKG_CONFIG_PATH=/opt/rtf/lib/pkgconfig LD_LIBRARY_PATH=/opt/rtf/lib
 *   cc speak-wav.c $(pkg-config --cflags --libs rtf) -lm -o speak-wav
 *   ./speak-wav KIT "Hello there." out.wav '{"greedy": true, "max-audio-s": 5}'
 *
 * The optional JSON is the engine's knobs (rtf speak's names, plus "profile"). *
 * The WAV is 16-bit mono, written as chunks arrive (the header is finished at the end). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include <rtf/rtf.h>

struct wav { FILE *f; uint32_t n; int rate; };

static void put(FILE *f, uint32_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) fputc((int)((v >> (8 * i)) & 0xff), f);
}

static void header(struct wav *w) {
    fseek(w->f, 0, SEEK_SET);
    fputs("RIFF", w->f); put(w->f, 36 + 2 * w->n, 4); fputs("WAVEfmt ", w->f);
    put(w->f, 16, 4); put(w->f, 1, 2); put(w->f, 1, 2);          /* PCM, mono */
    put(w->f, (uint32_t)w->rate, 4); put(w->f, (uint32_t)w->rate * 2, 4); put(w->f, 2, 2); put(w->f, 16, 2);
    fputs("data", w->f); put(w->f, 2 * w->n, 4);
    fseek(w->f, 0, SEEK_END);
}

static int on_pcm(void *user, const float *pcm, size_t n, int sample_rate) {
    struct wav *w = user;
    w->rate = sample_rate;
    for (size_t i = 0; i < n; ++i) {
        float x = isfinite(pcm[i]) ? fmaxf(-1.0f, fminf(1.0f, pcm[i])) : 0.0f;
        put(w->f, (uint16_t)(int16_t)lrintf(x * 32767.0f), 2);   /* as `rtf speak` rounds */
    }
    w->n += (uint32_t)n;
    return 0;   /* non-zero would cancel the run */
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s KIT TEXT OUT.wav [KNOBS_JSON]\n(rtf %s)\n", argv[0], rtf_version());
        return 1;
    }
    struct wav w = {fopen(argv[3], "wb"), 0, 24000};
    if (!w.f) { perror(argv[3]); return 1; }
    header(&w);
    rtf_engine *e = NULL;
    rtf_status s = rtf_open(argv[1], argc > 4 ? argv[4] : NULL, &e);
    if (s == RTF_OK) s = rtf_speak(e, RTF_INPUT_TEXT, argv[2], NULL, on_pcm, &w);
    header(&w);   /* valid WAV with whatever arrived, whatever happened */
    fclose(w.f);
    if (s != RTF_OK) fprintf(stderr, "speak-wav: %s\n", rtf_last_error());
    else printf("%s: %.2f s of audio\n", argv[3], (double)w.n / w.rate);
    rtf_close(e);
    return s == RTF_OK ? 0 : 1;
}
