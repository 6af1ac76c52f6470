/* What the C ABI's C tests share: checks that return the failure's text, a job with a link and
 * its proxies, and a copy as one submission. C only. */
#ifndef RIG_TESTS_C_REMOTE_SUPPORT_H
#define RIG_TESTS_C_REMOTE_SUPPORT_H

#include <stdio.h>
#include <string.h>

#include "c_remote.h"
#include "rig/edge.h"
#include "rig/remote.h"

extern _Thread_local char c_failure[512];

/* Returns the failure's text from the test when cond is false. */
#define CHECK(cond)                                                                   \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      snprintf(c_failure, sizeof c_failure, "%s:%d: %s", __FILE__, __LINE__, #cond); \
      return c_failure;                                                               \
    }                                                                                 \
  } while (0)
/* The same with the text of a result's why. */
#define CHECK_RC(expr, want, text)                                                          \
  do {                                                                                      \
    int rc_ = (expr);                                                                       \
    if (rc_ != (want)) {                                                                    \
      snprintf(c_failure, sizeof c_failure, "%s:%d: %s answered %d, not %d (%s)", __FILE__, \
               __LINE__, #expr, rc_, (int)(want), (text));                                  \
      return c_failure;                                                                     \
    }                                                                                       \
  } while (0)

/* A text buffer for why. */
typedef struct c_why {
  char buf[256];
  rig_text t;
} c_why;
void c_why_init(c_why* w);

/* A job connected to env's agent, and its link. */
typedef struct c_job {
  rig_job* job;
  rig_link* link;
} c_job;
/* Connects; NULL or the failure. */
const char* c_job_open(c_job* j, const c_env* env);
void c_job_end(c_job* j);

/* A test's job and proxies: the proxy of device i on word[i], for each i c_fx_open was asked. */
typedef struct c_fx {
  c_job j;
  c_why why;
  _Alignas(8) uint64_t word[3];
  rig_proxy* p[3];
} c_fx;
/* Opens the job and makes the proxies of the devices whose bits are set in `devices` (bit i:
 * device i, 0 the host; words start at 0); NULL or the failure. */
const char* c_fx_open(c_fx* fx, const c_env* env, unsigned devices);
/* Stops and releases the proxies still in p[], and ends the job. */
void c_fx_end(c_fx* fx);
/* Opens fx, or returns the failure from the calling test. */
#define C_FX_OPEN(fx, env, devices)                         \
  do {                                                      \
    const char* failed_ = c_fx_open((fx), (env), (devices)); \
    if (failed_ != NULL) return failed_;                    \
  } while (0)

/* Makes the proxy of device `id` (Device capability; Host for 0) on word. */
int c_make(c_job* j, uint32_t id, uint64_t* word, rig_proxy** p, c_why* why);

/* A copy part of rows rows of row_bytes, between host memory and a region's object. */
rig_part c_copy_in(void* from, uint64_t handle, uint64_t offset, uint64_t rows, uint64_t row_bytes,
                   uint64_t src_pitch, uint64_t dst_pitch);
rig_part c_copy_out(uint64_t handle, uint64_t offset, void* to, uint64_t rows, uint64_t row_bytes,
                    uint64_t src_pitch, uint64_t dst_pitch);
/* Submits the parts as `value`: room first, 100 + its answer if not RIG_FITS; else submit's. */
int c_submit(rig_proxy* p, const rig_part* parts, uint32_t n, const rig_wait* waits, uint32_t n_waits,
             uint64_t value, const char** why);
/* Sleeps until the word reaches value: RIG_OK, or sleep's failure. */
int c_wait(rig_proxy* p, uint64_t value, c_why* why);
/* Milliseconds of CLOCK_MONOTONIC. */
uint64_t c_now_ms(void);

#endif /* RIG_TESTS_C_REMOTE_SUPPORT_H */
