/* The C ABI from C: strided rows at their edges, room's answers, sleep's bound and stop
 * (c_remote.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <time.h>

#include "c_remote_support.h"

/* Rows of a strided copy: 1 and 2 rows, a pitch equal to and larger than the row, the last row
 * ending exactly at the object's end, both ways. */
const char* c_remote_strided_edges(const c_env* env) {
  c_fx fx;
  C_FX_OPEN(&fx, env, 1u << 1);
  rig_proxy* p = fx.p[1];
  enum { kObject = 4096, kRow = 100, kPitch = 300 };
  rig_region r;
  CHECK_RC(rig_proxy_alloc(p, RIG_MEMORY_DEVICE, kObject, &r, &fx.why.t), RIG_OK, fx.why.buf);
  unsigned char src[2 * kPitch], dst[2 * kPitch], zero[kObject], whole[kObject];
  for (unsigned i = 0; i < sizeof src; ++i) src[i] = (unsigned char)(i * 7 + 1);
  memset(zero, 0, sizeof zero);
  const char* text = NULL;
  uint64_t value = 0;
  const uint64_t rows[] = {1, 2};
  const uint64_t pitches[] = {kRow, kPitch};
  for (int ri = 0; ri < 2; ++ri) {
    for (int pi = 0; pi < 2; ++pi) {
      const uint64_t n = rows[ri], pitch = pitches[pi];
      const uint64_t at = kObject - ((n - 1) * pitch + kRow); /* the last row ends at the end */
      memset(dst, 0, sizeof dst);
      rig_part parts[3] = {
          c_copy_in(zero, r.id, 0, 1, kObject, 0, 0),
          c_copy_in(src, r.id, at, n, kRow, pitch, pitch),
          c_copy_out(r.id, at, dst, n, kRow, pitch, pitch),
      };
      CHECK_RC(c_submit(p, parts, 3, NULL, 0, ++value, &text), RIG_COMMITTED, text ? text : "");
      rig_part all = c_copy_out(r.id, 0, whole, 1, kObject, 0, 0);
      CHECK_RC(c_submit(p, &all, 1, NULL, 0, ++value, &text), RIG_COMMITTED, text ? text : "");
      CHECK_RC(c_wait(p, value, &fx.why), RIG_OK, fx.why.buf);
      for (uint64_t k = 0; k < n; ++k) {
        CHECK(memcmp(dst + k * pitch, src + k * pitch, kRow) == 0);
        CHECK(memcmp(whole + at + k * pitch, src + k * pitch, kRow) == 0);
        /* Nothing between the rows: the gap after row k stays as it was. */
        if (k + 1 < n) CHECK(memcmp(whole + at + k * pitch + kRow, zero, pitch - kRow) == 0);
        if (k + 1 < n) CHECK(memcmp(dst + k * pitch + kRow, zero, pitch - kRow) == 0);
      }
      CHECK(memcmp(whole, zero, at) == 0);
    }
  }
  c_fx_end(&fx);
  return NULL;
}

/* RIG_NEVER for a kernel part and for a copy from here after a copy into here; RIG_LATER while
 * more than 64 MiB is in flight; RIG_FITS for anything once nothing is. */
const char* c_remote_room(const c_env* env) {
  c_fx fx;
  C_FX_OPEN(&fx, env, 3u << 1);
  rig_proxy *p = fx.p[1], *gate = fx.p[2];
  const uint64_t big = (64u << 20) + 4;
  rig_region r;
  CHECK_RC(rig_proxy_alloc(p, RIG_MEMORY_DEVICE, big, &r, &fx.why.t), RIG_OK, fx.why.buf);
  unsigned char* from = calloc(1, big);
  unsigned char byte = 0;
  CHECK(from != NULL);
  rig_part kernel;
  memset(&kernel, 0, sizeof kernel);
  kernel.kind = RIG_PART_KERNEL;
  rig_submission s = {NULL, 0, 1, &kernel};
  CHECK(rig_proxy_room(p, &s) == RIG_NEVER);
  rig_part out_then_in[2] = {c_copy_out(r.id, 0, &byte, 1, 1, 0, 0), c_copy_in(&byte, r.id, 4, 1, 1, 0, 0)};
  s.parts = out_then_in;
  s.n_parts = 2;
  CHECK(rig_proxy_room(p, &s) == RIG_NEVER);
  /* 64 MiB + 4 copied within the device, held by the agent behind a wait on the gate's value 1,
   * not yet submitted (a copy from here would wait for it here, before it is sent). */
  rig_region r2;
  CHECK_RC(rig_proxy_alloc(p, RIG_MEMORY_DEVICE, big, &r2, &fx.why.t), RIG_OK, fx.why.buf);
  rig_wait wait = {&fx.word[2], 2, 1};
  rig_part within = c_copy_in(NULL, r2.id, 0, 1, big, 0, 0);
  within.u.copy.src.handle = r.id;
  const char* text = NULL;
  CHECK_RC(c_submit(p, &within, 1, &wait, 1, 1, &text), RIG_COMMITTED, text ? text : "");
  rig_part small = c_copy_in(from, r.id, 0, 1, 4, 0, 0);
  s.parts = &small;
  s.n_parts = 1;
  CHECK(rig_proxy_room(p, &s) == RIG_LATER);
  rig_submission none = {NULL, 0, 0, NULL};
  CHECK_RC(rig_proxy_submit(gate, &none, 1, &text), RIG_COMMITTED, text ? text : "");
  CHECK_RC(c_wait(p, 1, &fx.why), RIG_OK, fx.why.buf);
  CHECK(rig_proxy_room(p, &s) == RIG_FITS);
  free(from);
  c_fx_end(&fx);
  return NULL;
}

/* sleep returns at once when the word differs, and otherwise by still_ms: not before it, and not
 * at a bound ten times as long. */
const char* c_remote_sleep_bound(const c_env* env) {
  c_fx fx;
  C_FX_OPEN(&fx, env, 0);
  _Alignas(8) uint64_t w = 5;
  rig_proxy* p = NULL;
  CHECK_RC(c_make(&fx.j, 1, &w, &p, &fx.why), RIG_OK, fx.why.buf);
  uint64_t t0 = c_now_ms();
  CHECK_RC(rig_proxy_sleep(p, 4, 60000, &fx.why.t), RIG_OK, fx.why.buf);
  CHECK(c_now_ms() - t0 < 30000);
  t0 = c_now_ms();
  CHECK_RC(rig_proxy_sleep(p, 5, 300, &fx.why.t), RIG_OK, fx.why.buf);
  const uint64_t took = c_now_ms() - t0;
  CHECK(took >= 300 && took < 3000);
  rig_proxy_release(p);
  c_fx_end(&fx);
  return NULL;
}

/* stop writes the last value given to submit at once when no copy into this process's memory is
 * pending, though the agent still holds that value's work; release then says the word is quiet. */
const char* c_remote_stop(const c_env* env) {
  c_fx fx;
  C_FX_OPEN(&fx, env, 3u << 1);
  rig_proxy* p = fx.p[1]; /* fx.p[2] is the gate: it never submits */
  rig_submission none = {NULL, 0, 0, NULL};
  const char* text = NULL;
  CHECK_RC(rig_proxy_submit(p, &none, 3, &text), RIG_COMMITTED, text ? text : "");
  CHECK_RC(c_wait(p, 3, &fx.why), RIG_OK, fx.why.buf);
  rig_wait never = {&fx.word[2], 2, 1}; /* the gate's value 1 is never submitted */
  rig_submission held = {&never, 1, 0, NULL};
  CHECK_RC(rig_proxy_submit(p, &held, 9, &text), RIG_COMMITTED, text ? text : "");
  CHECK(rig_proxy_signaled(p) == 3);
  CHECK_RC(rig_proxy_stop(p, "lost"), RIG_OK, "stop");
  CHECK(rig_proxy_signaled(p) == 9);
  CHECK(rig_proxy_release(p) == 1);
  fx.p[1] = NULL;
  c_fx_end(&fx);
  return NULL;
}

/* A proxy released while a copy into this process's memory is pending is not quiet: the copy's
 * bytes land later, and then the word takes the last value. */
const char* c_remote_release_pending(const c_env* env) {
  c_fx fx;
  C_FX_OPEN(&fx, env, 3u << 1);
  rig_proxy *p = fx.p[1], *gate = fx.p[2];
  rig_region r;
  CHECK_RC(rig_proxy_alloc(p, RIG_MEMORY_DEVICE, 64, &r, &fx.why.t), RIG_OK, fx.why.buf);
  unsigned char back[64];
  memset(back, 0, sizeof back);
  rig_wait gate_1 = {&fx.word[2], 2, 1};
  rig_part out = c_copy_out(r.id, 0, back, 1, sizeof back, 0, 0);
  const char* text = NULL;
  CHECK_RC(c_submit(p, &out, 1, &gate_1, 1, 4, &text), RIG_COMMITTED, text ? text : "");
  CHECK(rig_proxy_release(p) == 0); /* stopped, but the copy's bytes may still land */
  fx.p[1] = NULL;
  rig_submission none = {NULL, 0, 0, NULL};
  CHECK_RC(rig_proxy_submit(gate, &none, 1, &text), RIG_COMMITTED, text ? text : "");
  const uint64_t t0 = c_now_ms();
  while (__atomic_load_n(&fx.word[1], __ATOMIC_ACQUIRE) != 4 && c_now_ms() - t0 < 30000) {
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  CHECK(__atomic_load_n(&fx.word[1], __ATOMIC_ACQUIRE) == 4);
  c_fx_end(&fx);
  return NULL;
}
