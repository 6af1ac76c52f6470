/* Regions: a rig_region copied into a custom block (a value: no finaliser), and locate. */
#include <string.h>

#include "rig_ml.h"

static int region_compare(value a, value b) {
  const rig_region* x = Rig_ml_region(a);
  const rig_region* y = Rig_ml_region(b);
  if (x->link != y->link) return (uintptr_t)x->link < (uintptr_t)y->link ? -1 : 1;
  if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
  if (x->device != y->device) return x->device < y->device ? -1 : 1;
  if (x->id != y->id) return x->id < y->id ? -1 : 1;
  if (x->word != y->word) return (uintptr_t)x->word < (uintptr_t)y->word ? -1 : 1;
  return 0;
}

static intnat region_hash(value v) {
  const rig_region* r = Rig_ml_region(v);
  return (intnat)(r->id * 31u + r->device * 7u + r->kind + (uintptr_t)r->word);
}

static struct custom_operations region_ops = {
    "rig_remote.region",        custom_finalize_default,
    region_compare,             region_hash,
    custom_serialize_default,   custom_deserialize_default,
    custom_compare_ext_default, custom_fixed_length_default};

value rig_ml_region_alloc(const rig_region* r) {
  value block = caml_alloc_custom(&region_ops, sizeof(rig_region), 0, 1);
  memcpy(Rig_ml_region(block), r, sizeof *r);
  return block;
}

/* locate r: (address, host, handle, has_address, has_host). */
CAMLprim value rig_ml_region_locate(value region) {
  CAMLparam1(region);
  CAMLlocal4(result, address, host, handle);
  rig_location l;
  memset(&l, 0, sizeof l);
  rig_ml_check(rig_region_locate(Rig_ml_region(region), &l), "rig_remote: locate");
  address = caml_copy_nativeint((intnat)l.address);
  host = caml_copy_nativeint((intnat)l.host);
  handle = caml_copy_nativeint((intnat)l.handle);
  result = caml_alloc_tuple(5);
  Store_field(result, 0, address);
  Store_field(result, 1, host);
  Store_field(result, 2, handle);
  Store_field(result, 3, Val_bool(l.has_address));
  Store_field(result, 4, Val_bool(l.has_host));
  CAMLreturn(result);
}
