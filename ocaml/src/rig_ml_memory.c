/* Memory: alloc, free, map_peer, map_host, dma. Calls that ask the agent or send copy their
 * arguments out of the OCaml heap and release the runtime while they run. */
#include <stdlib.h>
#include <string.h>

#include "rig_ml.h"

/* alloc d m n: Some region, None, or an exception. */
CAMLprim value rig_ml_proxy_alloc(value v, value memory, value n) {
  CAMLparam3(v, memory, n);
  CAMLlocal1(region);
  RIG_ML_TEXT(why);
  if (Long_val(n) <= 0) caml_invalid_argument("Rig_remote_proxy.alloc: n is not positive");
  rig_proxy* p = Rig_ml_proxy(v)->proxy;
  const uint32_t m = Long_val(memory) == 0 ? RIG_MEMORY_DEVICE : RIG_MEMORY_HOST;
  const uint64_t bytes = (uint64_t)Long_val(n);
  rig_region r;
  memset(&r, 0, sizeof r);
  caml_release_runtime_system();
  const int rc = rig_proxy_alloc(p, m, bytes, &r, &why);
  caml_acquire_runtime_system();
  if (rc == RIG_NONE) CAMLreturn(Val_none);
  rig_ml_check(rc, why_data);
  region = rig_ml_region_alloc(&r);
  CAMLreturn(caml_alloc_some(region));
}

/* free d r: sends the release of r's object (nothing for a word). */
CAMLprim value rig_ml_proxy_free(value v, value region) {
  CAMLparam2(v, region);
  rig_proxy* p = Rig_ml_proxy(v)->proxy;
  rig_region r = *Rig_ml_region(region);
  caml_release_runtime_system();
  const int rc = rig_proxy_free(p, &r);
  caml_acquire_runtime_system();
  rig_ml_check(rc, "rig_remote: free");
  CAMLreturn(Val_unit);
}

/* map_peer d d2 r: Some region or None. */
CAMLprim value rig_ml_proxy_map_peer(value v, value v2, value region) {
  CAMLparam3(v, v2, region);
  CAMLlocal1(mapped);
  RIG_ML_TEXT(why);
  rig_proxy* p = Rig_ml_proxy(v)->proxy;
  const rig_proxy* p2 = Rig_ml_proxy(v2)->proxy;
  rig_region r = *Rig_ml_region(region);
  rig_region out;
  memset(&out, 0, sizeof out);
  caml_release_runtime_system();
  const int rc = rig_proxy_map_peer(p, p2, &r, &out, &why);
  caml_acquire_runtime_system();
  if (rc == RIG_NONE) CAMLreturn(Val_none);
  rig_ml_check(rc, why_data);
  mapped = rig_ml_region_alloc(&out);
  CAMLreturn(caml_alloc_some(mapped));
}

/* map_host d p n: a proxy maps no host memory (None); never blocks. */
CAMLprim value rig_ml_proxy_map_host(value v, value address, value n) {
  CAMLparam3(v, address, n);
  CAMLlocal1(mapped);
  rig_region out;
  memset(&out, 0, sizeof out);
  const int rc = rig_proxy_map_host(Rig_ml_proxy(v)->proxy, (uintptr_t)Long_val(address),
                                    (uint64_t)Long_val(n), &out);
  if (rc == RIG_NONE) CAMLreturn(Val_none);
  rig_ml_check(rc, "rig_remote: map_host");
  mapped = rig_ml_region_alloc(&out);
  CAMLreturn(caml_alloc_some(mapped));
}

/* dma d r ~fn: the reason it cannot (the memory is another machine's). */
CAMLprim value rig_ml_proxy_dma(value v, value region, value fn) {
  CAMLparam3(v, region, fn);
  RIG_ML_TEXT(why);
  char* f = rig_ml_strdup(fn);
  if (f == NULL) caml_raise_out_of_memory();
  const int rc = rig_proxy_dma(Rig_ml_proxy(v)->proxy, Rig_ml_region(region), f, &why);
  free(f);
  if (rc == RIG_ERROR || rc == RIG_OK) CAMLreturn(caml_copy_string(why_data));
  rig_ml_raise(rc, why_data);
}
