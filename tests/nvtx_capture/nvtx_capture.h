#ifndef GLASSBOX_NVTX_CAPTURE_H
#define GLASSBOX_NVTX_CAPTURE_H
/* What libglassbox_nvtx_capture recorded of the NVTX calls in this process.
 *
 * The library is an NVTX injection: NVTX loads it from NVTX_INJECTION64_PATH
 * at the process's first NVTX call. Tests must not link it (linking would load
 * it whether or not NVTX did); they find it with dlopen(path, RTLD_NOLOAD) and
 * these functions with dlsym, hence a plain C interface. All functions are
 * thread-safe. */
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum glassbox_nvtx_event_kind {
  GLASSBOX_NVTX_DOMAIN_CREATE = 1,
  GLASSBOX_NVTX_REGISTER_STRING = 2,
  GLASSBOX_NVTX_NAME_CATEGORY = 3,
  GLASSBOX_NVTX_PUSH = 4,
  GLASSBOX_NVTX_POP = 5,
  GLASSBOX_NVTX_START = 6,
  GLASSBOX_NVTX_END = 7,
  GLASSBOX_NVTX_MARK = 8,
  GLASSBOX_NVTX_COUNTER_REGISTER = 9, /* the counters extension */
  GLASSBOX_NVTX_COUNTER_SAMPLE = 10,
};

/* Longer texts are cut to GLASSBOX_NVTX_TEXT_MAX - 1 characters. */
#define GLASSBOX_NVTX_TEXT_MAX 256

/* Stands in for what the library cannot read: a domain or string handle it
 * never returned, or a message that is neither ASCII nor registered. */
#define GLASSBOX_NVTX_UNKNOWN_TEXT "<unknown>"

struct glassbox_nvtx_event {
  int kind; /* a glassbox_nvtx_event_kind */
  /* The domain's name; "" for NVTX's default domain (a null handle). */
  char domain[GLASSBOX_NVTX_TEXT_MAX];
  /* domain_create: the domain's name; register_string: the string;
   * name_category: the category's name; push, start, mark: the message, with
   * registered strings resolved to their text; pop, end: the message of the
   * range closed ("" for a pop with nothing pushed, or an unknown end id);
   * counter_register: the counter's name; counter_sample: the name of the
   * counter it samples (GLASSBOX_NVTX_UNKNOWN_TEXT for an id never handed out). */
  char message[GLASSBOX_NVTX_TEXT_MAX];
  uint32_t category;  /* name_category, push, start, mark; the closed range's for pop and end */
  uint64_t thread_id; /* the calling thread's OS id (gettid) */
  /* start, end: the NVTX range id. push gets a fresh id too (NVTX has none for
   * pushed ranges) and its pop reports the same one, so tests can pair them.
   * 0 for the other kinds and for a pop with nothing pushed. */
  uint64_t range_id;
  /* counter_register: the id handed out; counter_sample: the id sampled. */
  uint64_t counter_id;
  int64_t value; /* counter_sample: the int64 sampled */
};

/* Number of events recorded so far. */
size_t glassbox_nvtx_capture_count(void);
/* Copies event `i` (in call order) to `out`; returns 0 if there is no such event. */
int glassbox_nvtx_capture_get(size_t i, struct glassbox_nvtx_event* out);
/* Forgets ranges, marks and counter samples. Registrations stay:
 * glassbox makes them once per process, so a test that cleared them could
 * never see them again. Open ranges stay open and still pair up later. */
void glassbox_nvtx_capture_clear(void);

typedef size_t (*glassbox_nvtx_capture_count_fn)(void);
typedef int (*glassbox_nvtx_capture_get_fn)(size_t, struct glassbox_nvtx_event*);
typedef void (*glassbox_nvtx_capture_clear_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* GLASSBOX_NVTX_CAPTURE_H */
