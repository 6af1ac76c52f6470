/* Results into exceptions, the timeline word's cell and its Word.t stubs. */
#include <caml/callback.h>
#include <stdlib.h>
#include <string.h>

#include "rig_ml.h"

void rig_ml_raise(int rc, const char* why) {
  switch (rc) {
    case RIG_FAULT: {
      const value* fault = caml_named_value("rig_remote_proxy.fault");
      if (fault != NULL) caml_raise_with_string(*fault, why);
      caml_failwith(why);
    }
    case RIG_INVALID_ARGUMENT: caml_invalid_argument(why);
    case RIG_BAD_HANDLE: caml_invalid_argument("rig_remote: a handle already released");
    case RIG_ERROR: caml_failwith(why);
    default: caml_failwith(*why != '\0' ? why : "rig_remote: an unexpected result");
  }
}

void rig_ml_check(int rc, const char* why) {
  if (rc != RIG_OK) rig_ml_raise(rc, why);
}

char* rig_ml_strdup(value s) {
  const mlsize_t n = caml_string_length(s);
  char* copy = malloc(n + 1);
  if (copy == NULL) return NULL;
  memcpy(copy, String_val(s), n);
  copy[n] = '\0';
  return copy;
}

void rig_ml_word_ref(rig_ml_word* w) { atomic_fetch_add_explicit(&w->refs, 1, memory_order_relaxed); }

void rig_ml_word_unref(rig_ml_word* w) {
  if (atomic_fetch_sub_explicit(&w->refs, 1, memory_order_acq_rel) == 1) free(w);
}

static void word_finalize(value v) {
  rig_ml_word* w = Rig_ml_word(v);
  if (w != NULL) rig_ml_word_unref(w);
}

static struct custom_operations word_ops = {
    "rig_remote.word",          word_finalize,
    custom_compare_default,     custom_hash_default,
    custom_serialize_default,   custom_deserialize_default,
    custom_compare_ext_default, custom_fixed_length_default};

/* Word.make: a new word holding v. */
CAMLprim value rig_ml_word_make(value v) {
  CAMLparam1(v);
  CAMLlocal1(block);
  block = caml_alloc_custom(&word_ops, sizeof(rig_ml_word*), 0, 1);
  Rig_ml_word(block) = NULL;
  rig_ml_word* w = malloc(sizeof *w);
  if (w == NULL) caml_raise_out_of_memory();
  atomic_init(&w->refs, 1);
  __atomic_store_n(&w->word, (uint64_t)Long_val(v), __ATOMIC_RELEASE);
  Rig_ml_word(block) = w;
  CAMLreturn(block);
}

/* Word.get: the word's value, read with acquire order. */
CAMLprim value rig_ml_word_get(value v) {
  return Val_long((intnat)__atomic_load_n(&Rig_ml_word(v)->word, __ATOMIC_ACQUIRE));
}

/* Word.address: the word's host address. */
CAMLprim value rig_ml_word_address(value v) {
  CAMLparam1(v);
  CAMLreturn(caml_copy_nativeint((intnat)(uintptr_t)&Rig_ml_word(v)->word));
}
