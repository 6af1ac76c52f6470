/* Proxies: make (the custom block and its finaliser), facts, capability, the C functions, the
 * timeline (signaled, sleep, stop) and grow. */
#include <stdlib.h>
#include <string.h>

#include "rig_ml.h"

/* Never blocks and sends nothing. The word's cell is let go only once the proxy says nothing
 * writes the word any more (1); otherwise a copy's bytes may still land and the word advance,
 * so the proxy's reference is kept for ever (a deliberate leak of 16 bytes). */
static void proxy_finalize(value v) {
  rig_ml_proxy* d = Rig_ml_proxy(v);
  if (d->proxy == NULL) return;
  if (rig_proxy_release(d->proxy) == 1) rig_ml_word_unref(d->word);
  d->proxy = NULL;
}

static int proxy_compare(value a, value b) {
  const uintptr_t x = (uintptr_t)Rig_ml_proxy(a)->proxy, y = (uintptr_t)Rig_ml_proxy(b)->proxy;
  return x < y ? -1 : x > y;
}

static struct custom_operations proxy_ops = {
    "rig_remote.proxy",         proxy_finalize,
    proxy_compare,              custom_hash_default,
    custom_serialize_default,   custom_deserialize_default,
    custom_compare_ext_default, custom_fixed_length_default};

/* make: link, account id, capability kind, capability id, word. The block is allocated before
 * rig_device_make, and nothing is allocated after it, so no exception leaves a proxy made. */
CAMLprim value rig_ml_proxy_make(value link, value account, value kind, value id, value word) {
  CAMLparam5(link, account, kind, id, word);
  CAMLlocal1(block);
  RIG_ML_TEXT(why);
  block = caml_alloc_custom(&proxy_ops, sizeof(rig_ml_proxy), 0, 1);
  rig_ml_proxy* d = Rig_ml_proxy(block);
  d->proxy = NULL;
  d->word = Rig_ml_word(word);
  rig_device dev;
  memset(&dev, 0, sizeof dev);
  dev.size = sizeof dev;
  dev.link = Rig_ml_link(link)->link;
  dev.account = (uint32_t)Long_val(account);
  dev.capability.kind = (uint32_t)Long_val(kind);
  dev.capability.id = (uint32_t)Long_val(id);
  rig_proxy* p = NULL;
  rig_ml_word_ref(d->word);
  const int rc = rig_device_make(&dev, &d->word->word, &p, &why);
  if (rc != RIG_OK) {
    rig_ml_word_unref(d->word);
    rig_ml_raise(rc, why_data);
  }
  d->proxy = p;
  CAMLreturn(block);
}

/* facts d: (arch, budget, cache_bytes, copy_engine, waits_most, may_block, maps_host,
 * host_addresses, cap_kind, cap_id, word, n_queues, has_hang_ms, hang_ms, has_bus). */
CAMLprim value rig_ml_proxy_facts(value v) {
  CAMLparam1(v);
  CAMLlocal3(result, arch, word);
  rig_facts f;
  memset(&f, 0, sizeof f);
  f.size = sizeof f;
  rig_ml_check(rig_proxy_facts(Rig_ml_proxy(v)->proxy, &f), "rig_remote: facts");
  f.arch[sizeof f.arch - 1] = '\0';
  arch = caml_copy_string(f.arch);
  word = rig_ml_region_alloc(&f.word);
  const intnat most = f.waits_most > (uint64_t)Max_long ? Max_long : (intnat)f.waits_most;
  const value fields[] = {arch, Val_long((intnat)f.budget), Val_long((intnat)f.cache_bytes),
                          Val_long(f.copy_engine), Val_long(most), Val_bool(f.may_block),
                          Val_bool(f.maps_host), Val_bool(f.host_addresses),
                          Val_long(f.capability.kind), Val_long(f.capability.id), word,
                          Val_long(f.n_queues), Val_bool(f.has_hang_ms), Val_long((intnat)f.hang_ms),
                          Val_bool(f.has_bus)};
  const mlsize_t n = sizeof fields / sizeof fields[0];
  result = caml_alloc_tuple(n);
  /* arch and word are rooted; the rest are immediates, so nothing moved since fields[] */
  for (mlsize_t i = 0; i < n; ++i) Store_field(result, i, i == 0 ? arch : i == 10 ? word : fields[i]);
  CAMLreturn(result);
}

/* capability d: (kind, id). */
CAMLprim value rig_ml_proxy_capability(value v) {
  CAMLparam1(v);
  CAMLlocal1(result);
  rig_capability c = {0, 0};
  rig_ml_check(rig_proxy_capability(Rig_ml_proxy(v)->proxy, &c), "rig_remote: capability");
  result = caml_alloc_tuple(2);
  Store_field(result, 0, Val_long(c.kind));
  Store_field(result, 1, Val_long(c.id));
  CAMLreturn(result);
}

/* The C functions and the handle they take: (room, submit, commit, handle). */
CAMLprim value rig_ml_proxy_c_functions(value v) {
  CAMLparam1(v);
  CAMLlocal5(result, room, submit, commit, handle);
  room = caml_copy_nativeint((intnat)(uintptr_t)&rig_proxy_room);
  submit = caml_copy_nativeint((intnat)(uintptr_t)&rig_proxy_submit);
  commit = caml_copy_nativeint((intnat)(uintptr_t)&rig_proxy_commit);
  handle = caml_copy_nativeint((intnat)(uintptr_t)Rig_ml_proxy(v)->proxy);
  result = caml_alloc_tuple(4);
  Store_field(result, 0, room);
  Store_field(result, 1, submit);
  Store_field(result, 2, commit);
  Store_field(result, 3, handle);
  CAMLreturn(result);
}

/* signaled d: never blocks, so the runtime stays held ([@@noalloc]: no CAMLparam needed). */
CAMLprim value rig_ml_proxy_signaled(value v) {
  return Val_long((intnat)rig_proxy_signaled(Rig_ml_proxy(v)->proxy));
}

/* sleep d ~seen ~still_ms: releases the runtime while it waits. */
CAMLprim value rig_ml_proxy_sleep(value v, value seen, value still_ms) {
  CAMLparam3(v, seen, still_ms);
  RIG_ML_TEXT(why);
  rig_proxy* p = Rig_ml_proxy(v)->proxy;
  const uint64_t s = (uint64_t)Long_val(seen);
  const uint64_t ms = Long_val(still_ms) < 0 ? 0 : (uint64_t)Long_val(still_ms);
  caml_release_runtime_system();
  const int rc = rig_proxy_sleep(p, s, ms, &why);
  caml_acquire_runtime_system();
  rig_ml_check(rc, why_data);
  CAMLreturn(Val_unit);
}

/* stop d ~fault: waits for nothing; the fault is ignored (the page's stop). */
CAMLprim value rig_ml_proxy_stop(value v, value fault) {
  CAMLparam2(v, fault);
  rig_ml_check(rig_proxy_stop(Rig_ml_proxy(v)->proxy, NULL), "rig_remote: stop");
  CAMLreturn(Val_unit);
}

/* grow d: -1 for Grown, else Short's bytes. */
CAMLprim value rig_ml_proxy_grow(value v) {
  CAMLparam1(v);
  uint64_t bytes = 0;
  const int rc = rig_proxy_grow(Rig_ml_proxy(v)->proxy, &bytes);
  if (rc == RIG_SHORT) CAMLreturn(Val_long((intnat)bytes));
  rig_ml_check(rc, "rig_remote: grow");
  CAMLreturn(Val_long(-1));
}

/* peer d d2: from what the handshake gave; never blocks. */
CAMLprim value rig_ml_proxy_peer(value a, value b) {
  CAMLparam2(a, b);
  int yes = 0;
  const int rc = rig_proxy_peer(Rig_ml_proxy(a)->proxy, Rig_ml_proxy(b)->proxy, &yes);
  rig_ml_check(rc, "rig_remote: peer");
  CAMLreturn(Val_bool(yes));
}

/* The device's name, as its account gives it. */
CAMLprim value rig_ml_proxy_name(value v) {
  CAMLparam1(v);
  RIG_ML_TEXT(name);
  rig_ml_check(rig_proxy_name(Rig_ml_proxy(v)->proxy, &name), "rig_remote: name");
  CAMLreturn(caml_copy_string(name_data));
}
