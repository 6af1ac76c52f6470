/* The C ABI from C: code on the host, Fault after close and after the agent dies, bad handles,
 * texts, and threads calling at once (c_remote.h). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "c_remote_support.h"

const char* c_remote_code(const c_env* env) {
  c_fx fx;
  C_FX_OPEN(&fx, env, 0);
  _Alignas(8) uint64_t wh = 0, w1 = 0;
  rig_proxy *host = NULL, *p = NULL;
  CHECK_RC(c_make(&fx.j, 0, &wh, &host, &fx.why), RIG_OK, fx.why.buf);
  CHECK_RC(c_make(&fx.j, 1, &w1, &p, &fx.why), RIG_OK, fx.why.buf);
  rig_image* image = NULL;
  CHECK_RC(rig_proxy_image(p, env->program, env->program_bytes, &image, &fx.why.t), RIG_ERROR, fx.why.buf);
  CHECK(strstr(fx.why.buf, "loads no code") != NULL);
  CHECK_RC(rig_proxy_image(host, "junk", 4, &image, &fx.why.t), RIG_ERROR, fx.why.buf);
  CHECK_RC(rig_proxy_image(host, env->program, env->program_bytes, &image, &fx.why.t), RIG_OK, fx.why.buf);
  CHECK_RC(rig_image_prepare(image, "counter"), RIG_OK, "prepare");
  uint32_t fn = 99;
  uint64_t bytes = 0;
  CHECK_RC(rig_image_entry(image, "counter", &fn, &bytes, &fx.why.t), RIG_OK, fx.why.buf);
  CHECK(fn == 0);
  CHECK_RC(rig_image_entry(image, "nothing", &fn, &bytes, &fx.why.t), RIG_ABSENT, fx.why.buf);
  /* Run counter on a host buffer of 4 bytes: its word is the object's id's low 32 bits. */
  rig_region buf;
  CHECK_RC(rig_proxy_alloc(host, RIG_MEMORY_DEVICE, 4, &buf, &fx.why.t), RIG_OK, fx.why.buf);
  uint32_t zero = 41, out = 0, arg = (uint32_t)buf.id;
  rig_part parts[3];
  parts[0] = c_copy_in(&zero, buf.id, 0, 1, 4, 0, 0);
  memset(&parts[1], 0, sizeof parts[1]);
  parts[1].kind = RIG_PART_WORDS;
  parts[1].queue = RIG_QUEUE_COMPUTE;
  parts[1].u.words.image = rig_image_id(image);
  parts[1].u.words.function = fn;
  parts[1].u.words.n_words = 1;
  parts[1].u.words.words = &arg;
  parts[2] = c_copy_out(buf.id, 0, &out, 1, 4, 0, 0);
  const char* text = NULL;
  CHECK_RC(c_submit(host, parts, 3, NULL, 0, 1, &text), RIG_COMMITTED, text ? text : "");
  CHECK_RC(c_wait(host, 1, &fx.why), RIG_OK, fx.why.buf);
  CHECK(out == 42);
  CHECK_RC(rig_proxy_free(host, &buf), RIG_OK, "free");
  CHECK_RC(rig_proxy_unload(host, image), RIG_OK, "unload");
  rig_image_release(image);
  CHECK_RC(rig_image_prepare(image, "counter"), RIG_BAD_HANDLE, "a released image");
  /* An image whose host proxy was released is answered RIG_BAD_HANDLE, never followed. */
  CHECK_RC(rig_proxy_image(host, env->program, env->program_bytes, &image, &fx.why.t), RIG_OK, fx.why.buf);
  rig_proxy_stop(host, NULL);
  rig_proxy_release(host);
  CHECK_RC(rig_image_entry(image, "counter", &fn, &bytes, &fx.why.t), RIG_BAD_HANDLE, fx.why.buf);
  CHECK_RC(rig_image_prepare(image, "counter"), RIG_BAD_HANDLE, "the loader was released");
  rig_image_release(image);
  rig_proxy_release(p);
  c_fx_end(&fx);
  return NULL;
}

const char* c_remote_closed(const c_env* env) {
  c_fx fx;
  C_FX_OPEN(&fx, env, 1u << 1);
  rig_proxy* p = fx.p[1];
  int state = -1;
  CHECK_RC(rig_job_state(fx.j.job, &state, &fx.why.t), RIG_OK, "state");
  CHECK(state == 0 && fx.why.buf[0] == '\0');
  CHECK_RC(rig_job_close(fx.j.job), RIG_OK, "close");
  CHECK_RC(rig_job_close(fx.j.job), RIG_OK, "close again");
  CHECK_RC(rig_job_state(fx.j.job, &state, &fx.why.t), RIG_OK, "state");
  CHECK(state == 2 && strcmp(fx.why.buf, "the job is closed") == 0);
  rig_region r;
  CHECK_RC(rig_proxy_alloc(p, RIG_MEMORY_DEVICE, 64, &r, &fx.why.t), RIG_FAULT, fx.why.buf);
  CHECK(strcmp(fx.why.buf, "the job is closed") == 0);
  rig_submission none = {NULL, 0, 0, NULL};
  const char* text = NULL;
  CHECK_RC(rig_proxy_submit(p, &none, 1, &text), RIG_FAILED, "submit");
  CHECK(text != NULL && strcmp(text, "the job is closed") == 0);
  rig_link* l = NULL;
  CHECK_RC(rig_job_connect(fx.j.job, env->endpoint, NULL, &l, &fx.why.t), RIG_FAULT, fx.why.buf);
  c_fx_end(&fx);
  return NULL;
}

const char* c_remote_agent_killed(const c_env* env) {
  c_fx fx;
  C_FX_OPEN(&fx, env, 1u << 1);
  rig_proxy* p = fx.p[1];
  env->kill_agent(env->kill_arg);
  /* The sleeper learns it within the bound: a Fault with the root cause. */
  const uint64_t t0 = c_now_ms();
  int rc = RIG_OK;
  while (rc == RIG_OK && c_now_ms() - t0 < 60000) rc = rig_proxy_sleep(p, 0, 1000, &fx.why.t);
  CHECK_RC(rc, RIG_FAULT, fx.why.buf);
  CHECK(fx.why.buf[0] != '\0' && strcmp(fx.why.buf, "the job is closed") != 0);
  int state = 0;
  CHECK_RC(rig_job_state(fx.j.job, &state, NULL), RIG_OK, "state");
  CHECK(state == 1);
  /* A close after the failure leaves the root cause the job's state. */
  char cause[256];
  snprintf(cause, sizeof cause, "%s", fx.why.buf);
  CHECK_RC(rig_job_close(fx.j.job), RIG_OK, "close");
  CHECK_RC(rig_job_state(fx.j.job, &state, &fx.why.t), RIG_OK, "state");
  CHECK(state == 1 && strcmp(fx.why.buf, cause) == 0);
  rig_region r;
  CHECK_RC(rig_proxy_alloc(p, RIG_MEMORY_DEVICE, 64, &r, &fx.why.t), RIG_FAULT, fx.why.buf);
  c_fx_end(&fx);
  return NULL;
}

const char* c_remote_bad_handles(const c_env* env) {
  c_fx fx;
  C_FX_OPEN(&fx, env, 1u << 1);
  rig_proxy* p = fx.p[1];
  rig_region r;
  memset(&r, 0, sizeof r);
  CHECK_RC(rig_proxy_alloc(NULL, RIG_MEMORY_DEVICE, 64, &r, &fx.why.t), RIG_BAD_HANDLE, fx.why.buf);
  CHECK_RC(rig_job_connect(NULL, "127.0.0.1:1", NULL, NULL, &fx.why.t), RIG_BAD_HANDLE, fx.why.buf);
  CHECK_RC(rig_proxy_sleep(NULL, 0, 1, &fx.why.t), RIG_BAD_HANDLE, fx.why.buf);
  CHECK(rig_proxy_signaled(NULL) == 0);
  CHECK(rig_proxy_release(NULL) == -RIG_BAD_HANDLE);
  CHECK(rig_proxy_release(p) == 1);
  fx.p[1] = NULL;
  CHECK(rig_proxy_release(p) == -RIG_BAD_HANDLE);
  CHECK_RC(rig_proxy_alloc(p, RIG_MEMORY_DEVICE, 64, &r, &fx.why.t), RIG_BAD_HANDLE, fx.why.buf);
  CHECK_RC(rig_proxy_stop(p, NULL), RIG_BAD_HANDLE, "stop");
  /* A link is the job's: its handle lives while the job does, and not after. */
  rig_link* l = fx.j.link;
  rig_job* job = fx.j.job;
  c_fx_end(&fx);
  CHECK_RC(rig_job_close(job), RIG_BAD_HANDLE, "a released job");
  uint32_t n = 0;
  const uint64_t t0 = c_now_ms();
  while (rig_link_account_count(l, &n) == RIG_OK && c_now_ms() - t0 < 30000) {
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  CHECK_RC(rig_link_account_count(l, &n), RIG_BAD_HANDLE, "the link of an ended job");
  return NULL;
}

const char* c_remote_texts(const c_env* env) {
  (void)env;
  c_fx fx;
  C_FX_OPEN(&fx, env, 0);
  rig_job_close(fx.j.job);
  char small[5];
  memset(small, 'x', sizeof small);
  rig_text t = {small, sizeof small, 0};
  int state = 0;
  CHECK_RC(rig_job_state(fx.j.job, &state, &t), RIG_OK, "state");
  CHECK(t.needed == strlen("the job is closed") + 1 && strcmp(small, "the ") == 0);
  rig_text none = {NULL, 0, 0};
  CHECK_RC(rig_job_state(fx.j.job, &state, &none), RIG_OK, "state");
  CHECK(none.needed == strlen("the job is closed") + 1);
  c_fx_end(&fx);
  return NULL;
}

/* Threads at once: one submits copies in and out while two others sleep on its word and read
 * it, and another allocates and frees on a second proxy of the link. */
typedef struct c_threads {
  rig_proxy* p;
  rig_proxy* p2;
  atomic_int done;
  atomic_int failures;
} c_threads;

static void* sleeper(void* arg) {
  c_threads* t = arg;
  c_why why;
  c_why_init(&why);
  uint64_t last = 0;
  while (!atomic_load_explicit(&t->done, memory_order_acquire)) {
    const uint64_t seen = rig_proxy_signaled(t->p);
    if (seen < last) atomic_fetch_add(&t->failures, 1); /* the word never decreases */
    last = seen;
    if (rig_proxy_sleep(t->p, seen, 50, &why.t) != RIG_OK) atomic_fetch_add(&t->failures, 1);
  }
  return NULL;
}

static void* allocator(void* arg) {
  c_threads* t = arg;
  c_why why;
  c_why_init(&why);
  while (!atomic_load_explicit(&t->done, memory_order_acquire)) {
    rig_region r;
    if (rig_proxy_alloc(t->p2, RIG_MEMORY_DEVICE, 4096, &r, &why.t) != RIG_OK ||
        rig_proxy_free(t->p2, &r) != RIG_OK) {
      atomic_fetch_add(&t->failures, 1);
    }
  }
  return NULL;
}

const char* c_remote_threads(const c_env* env) {
  c_fx fx;
  C_FX_OPEN(&fx, env, 0);
  _Alignas(8) uint64_t w = 0, w2 = 0;
  c_threads t;
  memset(&t, 0, sizeof t);
  CHECK_RC(c_make(&fx.j, 1, &w, &t.p, &fx.why), RIG_OK, fx.why.buf);
  CHECK_RC(c_make(&fx.j, 2, &w2, &t.p2, &fx.why), RIG_OK, fx.why.buf);
  enum { kBytes = 1 << 16, kRounds = 200 };
  rig_region r;
  CHECK_RC(rig_proxy_alloc(t.p, RIG_MEMORY_DEVICE, kBytes, &r, &fx.why.t), RIG_OK, fx.why.buf);
  pthread_t threads[3];
  pthread_create(&threads[0], NULL, sleeper, &t);
  pthread_create(&threads[1], NULL, sleeper, &t);
  pthread_create(&threads[2], NULL, allocator, &t);
  static unsigned char from[kBytes], to[kBytes];
  const char* text = NULL;
  for (uint64_t v = 1; v <= kRounds; ++v) {
    memset(from, (int)v, sizeof from);
    rig_part parts[2] = {c_copy_in(from, r.id, 0, 1, kBytes, 0, 0), c_copy_out(r.id, 0, to, 1, kBytes, 0, 0)};
    CHECK_RC(c_submit(t.p, parts, 2, NULL, 0, v, &text), RIG_COMMITTED, text ? text : "");
    CHECK_RC(c_wait(t.p, v, &fx.why), RIG_OK, fx.why.buf);
    CHECK(to[0] == (unsigned char)v && to[kBytes - 1] == (unsigned char)v);
  }
  atomic_store_explicit(&t.done, 1, memory_order_release);
  for (int i = 0; i < 3; ++i) pthread_join(threads[i], NULL);
  CHECK(atomic_load(&t.failures) == 0);
  rig_proxy_stop(t.p, NULL);
  rig_proxy_stop(t.p2, NULL);
  rig_proxy_release(t.p);
  rig_proxy_release(t.p2);
  c_fx_end(&fx);
  return NULL;
}
