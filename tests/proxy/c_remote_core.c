/* The C ABI's core, driven from C: accounts, make's rules, memory, copies both ways, room, sleep
 * and stop (c_remote.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>

#include "c_remote_support.h"

const char* c_remote_accounts(const c_env* env) {
  c_fx fx;
  C_FX_OPEN(&fx, env, 0);
  uint32_t n = 0;
  CHECK_RC(rig_link_account_count(fx.j.link, &n), RIG_OK, "count");
  CHECK(n >= 3);
  rig_account a;
  memset(&a, 0, sizeof a);
  a.size = sizeof a;
  CHECK_RC(rig_link_account(fx.j.link, 0, &a), RIG_OK, "account 0");
  CHECK(a.id == 0 && strcmp(a.name, "host") == 0 && a.size == sizeof a);
  CHECK_RC(rig_link_account(fx.j.link, 1, &a), RIG_OK, "account 1");
  CHECK(a.id == 1 && a.budget > 0 && a.name[0] != '\0' && a.arch[0] != '\0');
  CHECK_RC(rig_link_account(fx.j.link, n, &a), RIG_INVALID_ARGUMENT, "past the last");
  /* An older caller's smaller struct: the library writes no byte past its size. */
  rig_account small;
  memset(&small, 0x5a, sizeof small);
  small.size = offsetof(rig_account, name);
  CHECK_RC(rig_link_account(fx.j.link, 1, &small), RIG_OK, "small");
  CHECK(small.id == 1 && small.budget == a.budget && (unsigned char)small.name[0] == 0x5a);
  uint64_t id1 = 0, id2 = 0;
  CHECK_RC(rig_link_fresh(fx.j.link, &id1), RIG_OK, "fresh");
  CHECK_RC(rig_link_fresh(fx.j.link, &id2), RIG_OK, "fresh");
  CHECK(id1 != id2 && id1 != 0);
  char ep[64], addr[64];
  rig_text tep = {ep, sizeof ep, 0}, taddr = {addr, sizeof addr, 0};
  CHECK_RC(rig_link_endpoint(fx.j.link, &tep, &taddr), RIG_OK, "endpoint");
  CHECK(strcmp(ep, env->endpoint) == 0 && tep.needed == strlen(env->endpoint) + 1 && addr[0] != '\0');
  c_fx_end(&fx);
  return NULL;
}

const char* c_remote_make_rules(const c_env* env) {
  c_fx fx;
  C_FX_OPEN(&fx, env, 0);
  _Alignas(8) uint64_t words[4] = {0, 0, 0, 0};
  rig_proxy* p = NULL;
  rig_device d;
  memset(&d, 0, sizeof d);
  d.size = sizeof d;
  d.link = fx.j.link;
  d.account = 1;
  d.capability.kind = RIG_CAPABILITY_HOST; /* Host for an account whose id is not 0 */
  CHECK_RC(rig_device_make(&d, &words[0], &p, &fx.why.t), RIG_INVALID_ARGUMENT, fx.why.buf);
  d.capability.kind = RIG_CAPABILITY_DEVICE;
  d.capability.id = 2; /* Device whose id is not the account's */
  CHECK_RC(rig_device_make(&d, &words[0], &p, &fx.why.t), RIG_INVALID_ARGUMENT, fx.why.buf);
  d.capability.id = 1;
  CHECK_RC(rig_device_make(&d, (uint64_t*)((char*)&words[0] + 4), &p, &fx.why.t), RIG_INVALID_ARGUMENT, fx.why.buf);
  CHECK(strstr(fx.why.buf, "aligned") != NULL);
  d.account = 99;
  d.capability.id = 99;
  CHECK_RC(rig_device_make(&d, &words[0], &p, &fx.why.t), RIG_INVALID_ARGUMENT, fx.why.buf);
  /* The failed makes registered nothing: the device's proxy is made once, then refused. */
  words[1] = 7;
  CHECK_RC(c_make(&fx.j, 1, &words[1], &p, &fx.why), RIG_OK, fx.why.buf);
  rig_proxy* again = NULL;
  CHECK_RC(c_make(&fx.j, 1, &words[2], &again, &fx.why), RIG_INVALID_ARGUMENT, fx.why.buf);
  rig_capability cap;
  CHECK_RC(rig_proxy_capability(p, &cap), RIG_OK, "capability");
  CHECK(cap.kind == RIG_CAPABILITY_DEVICE && cap.id == 1);
  CHECK(rig_proxy_signaled(p) == 7); /* its values start after the word's */
  /* A proxy that handed nothing over, released, permits another of the account. */
  CHECK(rig_proxy_release(p) == 1);
  CHECK_RC(c_make(&fx.j, 1, &words[2], &again, &fx.why), RIG_OK, fx.why.buf);
  rig_proxy* host = NULL;
  CHECK_RC(c_make(&fx.j, 0, &words[3], &host, &fx.why), RIG_OK, fx.why.buf);
  rig_facts facts;
  memset(&facts, 0, sizeof facts);
  facts.size = sizeof facts;
  CHECK_RC(rig_proxy_facts(again, &facts), RIG_OK, "facts");
  CHECK(facts.n_queues == 2 && facts.copy_engine == 1 && facts.may_block == 1 && facts.maps_host == 0);
  CHECK(facts.word.kind == RIG_REGION_WORD && facts.word.word == &words[2] && facts.word.device == 1);
  CHECK(facts.waits_most == UINT64_MAX && facts.has_hang_ms == 0 && facts.has_bus == 0);
  /* An older caller's smaller facts: no byte past its size is written. */
  rig_facts small;
  memset(&small, 0x5a, sizeof small);
  small.size = offsetof(rig_facts, n_queues);
  CHECK_RC(rig_proxy_facts(again, &small), RIG_OK, "small facts");
  CHECK(small.budget == facts.budget && ((const unsigned char*)&small)[small.size] == 0x5a);
  CHECK(rig_proxy_key() != NULL);
  rig_proxy_release(again);
  rig_proxy_release(host);
  c_fx_end(&fx);
  return NULL;
}

const char* c_remote_memory(const c_env* env) {
  c_fx fx;
  C_FX_OPEN(&fx, env, 3u << 1);
  rig_proxy *p = fx.p[1], *p2 = fx.p[2];
  rig_region r;
  CHECK_RC(rig_proxy_alloc(p, RIG_MEMORY_DEVICE, 0, &r, &fx.why.t), RIG_INVALID_ARGUMENT, fx.why.buf);
  CHECK_RC(rig_proxy_alloc(p, RIG_MEMORY_DEVICE, 6, &r, &fx.why.t), RIG_INVALID_ARGUMENT, fx.why.buf);
  CHECK_RC(rig_proxy_alloc(p, 7, 8, &r, &fx.why.t), RIG_INVALID_ARGUMENT, fx.why.buf);
  CHECK_RC(rig_proxy_alloc(p, RIG_MEMORY_HOST + 1, 8, &r, &fx.why.t), RIG_INVALID_ARGUMENT, fx.why.buf);  /* one past the last kind */
  CHECK_RC(rig_proxy_alloc(p, RIG_MEMORY_DEVICE, (uint64_t)1 << 50, &r, &fx.why.t), RIG_NONE, fx.why.buf);
  CHECK_RC(rig_proxy_alloc(p, RIG_MEMORY_DEVICE, 4, &r, &fx.why.t), RIG_OK, fx.why.buf);
  rig_location l;
  CHECK_RC(rig_region_locate(&r, &l), RIG_OK, "locate");
  CHECK(l.has_address == 0 && l.has_host == 0 && l.handle == r.id && r.id != 0 && r.bytes == 4);
  rig_facts facts;
  memset(&facts, 0, sizeof facts);
  facts.size = sizeof facts;
  CHECK_RC(rig_proxy_facts(p, &facts), RIG_OK, "facts");
  CHECK_RC(rig_region_locate(&facts.word, &l), RIG_OK, "locate word");
  CHECK(l.has_address == 1 && l.address == 1 && l.has_host == 1 && l.host == (uint64_t)(uintptr_t)&fx.word[1] && l.handle == 0);
  int yes = -1;
  CHECK_RC(rig_proxy_peer(p, p, &yes), RIG_OK, "peer");
  CHECK(yes == 1);
  rig_region m;
  CHECK_RC(rig_proxy_map_peer(p2, p, &facts.word, &m, &fx.why.t), RIG_OK, fx.why.buf); /* a word maps as itself */
  CHECK(m.kind == RIG_REGION_WORD && m.word == &fx.word[1]);
  const int mp = rig_proxy_map_peer(p2, p, &r, &m, &fx.why.t);
  CHECK(mp == RIG_OK || mp == RIG_NONE);
  if (mp == RIG_OK) CHECK(m.id != r.id && m.device == 2 && rig_proxy_free(p2, &m) == RIG_OK);
  CHECK_RC(rig_proxy_map_host(p, 4096, 4096, &m), RIG_NONE, "map_host");
  CHECK_RC(rig_proxy_dma(p, &r, "0000:41:00.0", &fx.why.t), RIG_ERROR, fx.why.buf);
  CHECK(strstr(fx.why.buf, "0000:41:00.0") != NULL);
  uint64_t short_bytes = 9;
  CHECK_RC(rig_proxy_grow(p, &short_bytes), RIG_OK, "grow");
  CHECK(short_bytes == 0);
  CHECK_RC(rig_proxy_free(p, &r), RIG_OK, "free");
  CHECK_RC(rig_proxy_free(p, &facts.word), RIG_OK, "free of a word does nothing");
  c_fx_end(&fx);
  return NULL;
}

/* Fills n bytes with a pattern of seed. */
static void fill(unsigned char* b, uint64_t n, unsigned seed) {
  for (uint64_t i = 0; i < n; ++i) b[i] = (unsigned char)((i * 131u + seed) ^ (i >> 9));
}

const char* c_remote_copies(const c_env* env, uint64_t bytes) {
  c_fx fx;
  C_FX_OPEN(&fx, env, 1u << 1);
  rig_proxy* p = fx.p[1];
  rig_region r;
  CHECK_RC(rig_proxy_alloc(p, RIG_MEMORY_DEVICE, bytes, &r, &fx.why.t), RIG_OK, fx.why.buf);
  unsigned char* from = malloc(bytes);
  unsigned char* to = calloc(1, bytes);
  CHECK(from != NULL && to != NULL);
  fill(from, bytes, 3);
  const char* text = NULL;
  rig_part in = c_copy_in(from, r.id, 0, 1, bytes, 0, 0);
  CHECK_RC(c_submit(p, &in, 1, NULL, 0, 1, &text), RIG_COMMITTED, text ? text : "");
  rig_part out = c_copy_out(r.id, 0, to, 1, bytes, 0, 0);
  CHECK_RC(c_submit(p, &out, 1, NULL, 0, 2, &text), RIG_COMMITTED, text ? text : "");
  CHECK_RC(c_wait(p, 2, &fx.why), RIG_OK, fx.why.buf);
  CHECK(memcmp(from, to, bytes) == 0);
  /* The object's last byte: a 1-byte copy that ends exactly at its end, each way. */
  unsigned char last = 0xa7, back = 0;
  in = c_copy_in(&last, r.id, bytes - 1, 1, 1, 0, 0);
  out = c_copy_out(r.id, bytes - 1, &back, 1, 1, 0, 0);
  rig_part both[2] = {in, out};
  CHECK_RC(c_submit(p, both, 2, NULL, 0, 3, &text), RIG_COMMITTED, text ? text : "");
  CHECK_RC(c_wait(p, 3, &fx.why), RIG_OK, fx.why.buf);
  CHECK(back == 0xa7);
  free(from);
  free(to);
  CHECK_RC(rig_proxy_free(p, &r), RIG_OK, "free");
  CHECK_RC(rig_proxy_stop(p, NULL), RIG_OK, "stop");
  CHECK(rig_proxy_release(p) == 1);
  fx.p[1] = NULL;
  c_fx_end(&fx);
  return NULL;
}

/* rig_link_options: a field is read when the caller's size holds it, the last byte included, and
 * not otherwise; a bad value is RIG_INVALID_ARGUMENT and makes no link. */
const char* c_remote_options(const c_env* env) {
  c_fx fx;
  C_FX_OPEN(&fx, env, 0);
  rig_link* l = NULL;
  rig_link_options o;
  rig_link_options_init(&o);
  o.silence_ms = 0; /* not positive: refused when read */
  o.size = offsetof(rig_link_options, silence_ms) + sizeof o.silence_ms;
  CHECK_RC(rig_job_connect(fx.j.job, env->endpoint, &o, &l, &fx.why.t), RIG_INVALID_ARGUMENT, fx.why.buf);
  o.size = offsetof(rig_link_options, silence_ms); /* an older caller: silence_ms is not read */
  CHECK_RC(rig_job_connect(fx.j.job, env->endpoint, &o, &l, &fx.why.t), RIG_OK, fx.why.buf);
  rig_link_options_init(&o);
  o.staging.allocate = malloc; /* without release */
  CHECK_RC(rig_job_connect(fx.j.job, env->endpoint, &o, &l, &fx.why.t), RIG_INVALID_ARGUMENT, fx.why.buf);
  rig_link_options_init(&o);
  o.backend = 7;
  CHECK_RC(rig_job_connect(fx.j.job, env->endpoint, &o, &l, &fx.why.t), RIG_INVALID_ARGUMENT, fx.why.buf);
  o.size = 0;
  CHECK_RC(rig_job_connect(fx.j.job, env->endpoint, &o, &l, &fx.why.t), RIG_INVALID_ARGUMENT, fx.why.buf);
  /* A pinned name the agent does not give (no agent's name holds a space): no link, saying why;
   * a caller whose size ends before agent_name pins nothing. */
  rig_link_options_init(&o);
  o.agent_name = "no such agent";
  CHECK_RC(rig_job_connect(fx.j.job, env->endpoint, &o, &l, &fx.why.t), RIG_ERROR, fx.why.buf);
  CHECK(strstr(fx.why.buf, "as the job pinned") != NULL);
  o.size = offsetof(rig_link_options, agent_name);
  CHECK_RC(rig_job_connect(fx.j.job, env->endpoint, &o, &l, &fx.why.t), RIG_OK, fx.why.buf);
  c_fx_end(&fx);
  return NULL;
}
