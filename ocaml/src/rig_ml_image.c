/* Code: image, entry, prepare, unload, and the image's custom block. */
#include <stdlib.h>
#include <string.h>

#include "rig_ml.h"

/* Never blocks and sends nothing. */
static void image_finalize(value v) {
  if (Rig_ml_image(v) != NULL) rig_image_release(Rig_ml_image(v));
  Rig_ml_image(v) = NULL;
}

static struct custom_operations image_ops = {
    "rig_remote.image",         image_finalize,
    custom_compare_default,     custom_hash_default,
    custom_serialize_default,   custom_deserialize_default,
    custom_compare_ext_default, custom_fixed_length_default};

/* image d b: Ok image or Error why. The image's block is allocated before the call, so no
 * exception after it loses the handle. */
CAMLprim value rig_ml_proxy_image(value v, value binary) {
  CAMLparam2(v, binary);
  CAMLlocal3(block, result, text);
  RIG_ML_TEXT(why);
  block = caml_alloc_custom(&image_ops, sizeof(rig_image*), 0, 1);
  Rig_ml_image(block) = NULL;
  rig_proxy* p = Rig_ml_proxy(v)->proxy;
  const size_t n = caml_string_length(binary);
  void* bytes = malloc(n > 0 ? n : 1);
  if (bytes == NULL) caml_raise_out_of_memory();
  memcpy(bytes, String_val(binary), n);
  rig_image* image = NULL;
  caml_release_runtime_system();
  const int rc = rig_proxy_image(p, bytes, n, &image, &why);
  caml_acquire_runtime_system();
  free(bytes);
  if (rc == RIG_ERROR) {
    text = caml_copy_string(why_data);
    result = caml_alloc_small(1, 1); /* Error why */
    Field(result, 0) = text;
    CAMLreturn(result);
  }
  rig_ml_check(rc, why_data);
  Rig_ml_image(block) = image;
  result = caml_alloc_small(1, 0); /* Ok image */
  Field(result, 0) = block;
  CAMLreturn(result);
}

/* entry i f: (0 Entry function | 1 Absent | 2 No_memory bytes, the number). */
CAMLprim value rig_ml_image_entry(value i, value f) {
  CAMLparam2(i, f);
  CAMLlocal1(result);
  RIG_ML_TEXT(why);
  rig_image* image = Rig_ml_image(i);
  char* name = rig_ml_strdup(f);
  if (name == NULL) caml_raise_out_of_memory();
  uint32_t function = 0;
  uint64_t bytes = 0;
  caml_release_runtime_system();
  const int rc = rig_image_entry(image, name, &function, &bytes, &why);
  caml_acquire_runtime_system();
  free(name);
  int answer = 0;
  intnat n = function;
  if (rc == RIG_ABSENT) answer = 1;
  else if (rc == RIG_NO_MEMORY) answer = 2, n = (intnat)bytes;
  else rig_ml_check(rc, why_data);
  result = caml_alloc_tuple(2);
  Store_field(result, 0, Val_int(answer));
  Store_field(result, 1, Val_long(n));
  CAMLreturn(result);
}

/* prepare i f: may start what entry makes; reports nothing. */
CAMLprim value rig_ml_image_prepare(value i, value f) {
  CAMLparam2(i, f);
  rig_image* image = Rig_ml_image(i);
  char* name = rig_ml_strdup(f);
  if (name == NULL) caml_raise_out_of_memory();
  caml_release_runtime_system();
  const int rc = rig_image_prepare(image, name);
  caml_acquire_runtime_system();
  free(name);
  rig_ml_check(rc, "rig_remote: prepare");
  CAMLreturn(Val_unit);
}

/* unload d i: sends the release of the image. */
CAMLprim value rig_ml_proxy_unload(value v, value i) {
  CAMLparam2(v, i);
  rig_proxy* p = Rig_ml_proxy(v)->proxy;
  rig_image* image = Rig_ml_image(i);
  caml_release_runtime_system();
  const int rc = rig_proxy_unload(p, image);
  caml_acquire_runtime_system();
  rig_ml_check(rc, "rig_remote: unload");
  CAMLreturn(Val_unit);
}
