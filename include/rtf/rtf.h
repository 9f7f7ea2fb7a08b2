/* rtf.h — rtfkit's C API: embed the streaming speak path (LLM -> TTS -> Token2Wav) in an
 * application. One engine handle holds a loaded kit; it speaks one utterance at a time and
 * hands you its PCM chunk by chunk as the pipeline makes it.
 *
 *   rtf_engine *e = NULL;
 *   if (rtf_open("kit", "{\"profile\": \"auto\"}", &e) != RTF_OK) {
 *       fprintf(stderr, "%s\n", rtf_last_error());
 *       return 1;
 *   }
 *   rtf_speak(e, RTF_INPUT_TEXT, "Hello there.", "{\"max-audio-s\": 5}", on_pcm, &my_state);
 *   puts(rtf_result_json(e));              // every metric of that run (docs/metrics.md)
 *   rtf_close(e);
 *
 * Build: `pkg-config --cflags --libs rtf` after `cmake --install build --prefix P`
 * (PKG_CONFIG_PATH=P/lib/pkgconfig). examples/speak-wav.c is a complete program.
 *
 * Knobs. Every setting is a knob of `rtf speak` (its --help lists them; the names are the
 * flags without "--"), given as a JSON object of name -> value (string, number or bool):
 *   - rtf_open's config: any knob, plus "profile": "auto" | "exact" | "none" (the machine
 *     profile, as `rtf speak --profile`; default: $RTF_PROFILE, else "auto"; the built-in
 *     table only — a tuned row is the CLI's, pass `rtf tune`'s tuned.json knobs here instead).
 *     Knobs given here win over the profile and are the defaults of every run.
 *   - rtf_speak's run knobs: only knobs that are not fixed when the engines load (audio
 *     length, queue depths, schedule, ...: rtf_config_json's "run_knobs" lists them); a
 *     load-time knob there (threads, types, devices, sampling) is RTF_ERR_USAGE naming it —
 *     reopen the engine to change it.
 *
 * Errors. Every call that can fail returns an rtf_status; the message (naming the file, knob,
 * tensor or stage that is wrong) is rtf_last_error(), kept per thread until that thread's next
 * failing call. No input crashes the process: a bad kit, knob or text is an error code.
 *
 * Threads. A handle speaks one utterance at a time: a second rtf_speak on the same handle
 * while one runs returns RTF_ERR_BUSY at once. Many handles may speak concurrently in one
 * process (each has its own contexts; they share the machine's cores). rtf_cancel may be
 * called from any thread (or a signal handler). rtf_close must not race a call on the same
 * handle. The PCM callback runs on the pipeline's sink thread.
 */
#ifndef RTF_RTF_H
#define RTF_RTF_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define RTF_API __attribute__((visibility("default")))
#else
#define RTF_API
#endif

/* The version of this header's interface; rtf_api_version() returns the library's. */
#define RTF_API_VERSION 1

typedef enum rtf_status {
    RTF_OK = 0,
    RTF_ERR_USAGE = 1,     /* a bad argument, knob, value, text or input file */
    RTF_ERR_SETUP = 2,     /* a missing or broken model file, an unsupported machine */
    RTF_ERR_RUNTIME = 3,   /* a stage failed while speaking (the message names it); the PCM
                              delivered before the failure is valid */
    RTF_ERR_BUSY = 4,      /* the handle is already speaking */
    RTF_CANCELLED = 5      /* not a failure: the run stopped early (rtf_cancel or the callback
                              asked); the PCM delivered so far is valid, the result is kept */
} rtf_status;

typedef enum rtf_input {
    RTF_INPUT_TEXT = 0,    /* speak this text as it is (TTS + Token2Wav; the LLM is idle) */
    RTF_INPUT_PROMPT = 1   /* a prompt: the LLM replies and the reply is spoken */
} rtf_input;

typedef struct rtf_engine rtf_engine;

/* One chunk of speech: `n` mono float samples in [-1, 1] at `sample_rate` Hz (24000).
 * `pcm` is valid during the call only. Return 0 to go on, non-zero to cancel the run
 * (rtf_speak then returns RTF_CANCELLED). */
typedef int (*rtf_pcm_callback)(void *user, const float *pcm, size_t n, int sample_rate);

/* "0.1.0 (llama.cpp b1234 abcdef)": this library and the llama.cpp it was built with. */
RTF_API const char *rtf_version(void);
RTF_API int rtf_api_version(void);

/* The message of this thread's last failing call ("" if none). */
RTF_API const char *rtf_last_error(void);

/* Loads the kit in `kit_dir` (an `rtf twin` kit or MiniCPM-o 4.5's GGUF files) with the knobs
 * of `config_json` (NULL or "" = the defaults and the profile). Seconds of work: the three
 * engines load and Token2Wav's graphs are built. On success *out is the handle. */
RTF_API rtf_status rtf_open(const char *kit_dir, const char *config_json, rtf_engine **out);

/* Speaks `input` (`kind`: an rtf_input, RTF_INPUT_TEXT or RTF_INPUT_PROMPT; UTF-8) with the open config plus `run_knobs_json`
 * (NULL or "" = none) and calls `on_pcm` for each chunk, in order, as it is made; blocks
 * until the run ends. `on_pcm` may be NULL (the run is measured, the audio dropped). */
RTF_API rtf_status rtf_speak(rtf_engine *e, int kind, const char *input, const char *run_knobs_json,
                             rtf_pcm_callback on_pcm, void *user);

/* Stops the run in progress on `e` within one chunk (rtf_speak returns RTF_CANCELLED).
 * Async-signal-safe. No effect when `e` is not speaking. */
RTF_API void rtf_cancel(rtf_engine *e);

/* The last run's result as JSON (`rtf speak --json`'s document: config, metrics, per-chunk
 * records, engine timings), "{}" before the first. Owned by `e`, valid until the next
 * rtf_speak or rtf_close on it. */
RTF_API const char *rtf_result_json(rtf_engine *e);

/* The handle's effective settings as JSON: {"kit", "knobs" (every knob's value), "run_knobs"
 * (the names rtf_speak's run_knobs_json may set), "profile" (the machine profile applied),
 * "profile_line", "engines" (load times), "version"}. Owned by `e`, valid until rtf_close. */
RTF_API const char *rtf_config_json(rtf_engine *e);

/* Frees the engines. NULL is fine. */
RTF_API void rtf_close(rtf_engine *e);

#ifdef __cplusplus
}
#endif

#endif /* RTF_RTF_H */
