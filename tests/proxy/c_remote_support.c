/* What the C ABI's C tests share (c_remote_support.h). */
#define _POSIX_C_SOURCE 200809L
#include "c_remote_support.h"

#include <time.h>

_Thread_local char c_failure[512];

void c_why_init(c_why* w) {
  memset(w, 0, sizeof *w);
  w->t.data = w->buf;
  w->t.size = sizeof w->buf;
}

const char* c_job_open(c_job* j, const c_env* env) {
  c_why why;
  c_why_init(&why);
  memset(j, 0, sizeof *j);
  CHECK_RC(rig_job_create(&j->job, &why.t), RIG_OK, why.buf);
  rig_link_options o;
  rig_link_options_init(&o);
  CHECK_RC(rig_job_connect(j->job, env->endpoint, &o, &j->link, &why.t), RIG_OK, why.buf);
  return NULL;
}

void c_job_end(c_job* j) {
  if (j->job != NULL) {
    rig_job_close(j->job);
    rig_job_release(j->job);
  }
  j->job = NULL;
}

const char* c_fx_open(c_fx* fx, const c_env* env, unsigned devices) {
  memset(fx, 0, sizeof *fx);
  c_why_init(&fx->why);
  const char* f = c_job_open(&fx->j, env);
  if (f != NULL) return f;
  for (uint32_t i = 0; i < 3; ++i) {
    if ((devices >> i) & 1u) CHECK_RC(c_make(&fx->j, i, &fx->word[i], &fx->p[i], &fx->why), RIG_OK, fx->why.buf);
  }
  return NULL;
}

void c_fx_end(c_fx* fx) {
  for (int i = 0; i < 3; ++i) {
    if (fx->p[i] == NULL) continue;
    rig_proxy_stop(fx->p[i], NULL);
    rig_proxy_release(fx->p[i]);
    fx->p[i] = NULL;
  }
  c_job_end(&fx->j);
}

int c_make(c_job* j, uint32_t id, uint64_t* word, rig_proxy** p, c_why* why) {
  rig_device d;
  memset(&d, 0, sizeof d);
  d.size = sizeof d;
  d.link = j->link;
  d.account = id;
  d.capability.kind = id == 0 ? RIG_CAPABILITY_HOST : RIG_CAPABILITY_DEVICE;
  d.capability.id = id;
  return rig_device_make(&d, word, p, &why->t);
}

static rig_part copy_part(uint64_t rows, uint64_t row_bytes, uint64_t src_pitch, uint64_t dst_pitch) {
  rig_part part;
  memset(&part, 0, sizeof part);
  part.kind = RIG_PART_COPY;
  part.queue = RIG_QUEUE_COPY;
  part.u.copy.rows = rows;
  part.u.copy.row_bytes = row_bytes;
  part.u.copy.src_pitch = src_pitch;
  part.u.copy.dst_pitch = dst_pitch;
  return part;
}

rig_part c_copy_in(void* from, uint64_t handle, uint64_t offset, uint64_t rows, uint64_t row_bytes,
                   uint64_t src_pitch, uint64_t dst_pitch) {
  rig_part part = copy_part(rows, row_bytes, src_pitch, dst_pitch);
  part.u.copy.src.host = from;
  part.u.copy.dst.handle = handle;
  part.u.copy.dst.offset = offset;
  return part;
}

rig_part c_copy_out(uint64_t handle, uint64_t offset, void* to, uint64_t rows, uint64_t row_bytes,
                    uint64_t src_pitch, uint64_t dst_pitch) {
  rig_part part = copy_part(rows, row_bytes, src_pitch, dst_pitch);
  part.u.copy.src.handle = handle;
  part.u.copy.src.offset = offset;
  part.u.copy.dst.host = to;
  return part;
}

int c_submit(rig_proxy* p, const rig_part* parts, uint32_t n, const rig_wait* waits, uint32_t n_waits,
             uint64_t value, const char** why) {
  rig_submission s;
  s.waits = waits;
  s.n_waits = n_waits;
  s.parts = parts;
  s.n_parts = n;
  const int room = rig_proxy_room(p, &s);
  if (room != RIG_FITS) return 100 + room;  /* 101: RIG_LATER, 102: RIG_NEVER */
  const int rc = rig_proxy_submit(p, &s, value, why);
  rig_proxy_commit(p);
  return rc;
}

int c_wait(rig_proxy* p, uint64_t value, c_why* why) {
  for (;;) {
    const uint64_t seen = rig_proxy_signaled(p);
    if (seen >= value) return RIG_OK;
    const int rc = rig_proxy_sleep(p, seen, 1000, &why->t);
    if (rc != RIG_OK) return rc;
  }
}

uint64_t c_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}
