/* The test's stand-in for rig's C side: builds a rig_submission from OCaml values and calls the
 * proxy's C functions through the pointers c_functions gave. */
#define CAML_NAME_SPACE
#include <caml/alloc.h>
#include <caml/bigarray.h>
#include <caml/fail.h>
#include <caml/memory.h>
#include <caml/mlvalues.h>
#include <caml/threads.h>
#include <stdlib.h>
#include <string.h>

#include "rig/edge.h"

typedef int (*room_fn)(rig_proxy*, const rig_submission*);
typedef int (*submit_fn)(rig_proxy*, const rig_submission*, uint64_t, const char**);
typedef void (*commit_fn)(rig_proxy*);

/* A side: Mem (bigarray, offset) is tag 0, Obj (handle, offset) tag 1. */
static rig_side read_side(value s) {
  rig_side side = {NULL, 0, 0};
  if (Tag_val(s) == 0) {
    side.host = (char*)Caml_ba_data_val(Field(s, 0)) + Long_val(Field(s, 1));
  } else {
    side.handle = (uint64_t)Nativeint_val(Field(s, 0));
    side.offset = (uint64_t)Long_val(Field(s, 1));
  }
  return side;
}

/* A part: Kernel (an immediate), or Copy { src; dst; rows; row_bytes; src_pitch; dst_pitch }. */
static rig_part read_part(value p) {
  rig_part part;
  memset(&part, 0, sizeof part);
  if (Is_long(p)) {
    part.kind = RIG_PART_KERNEL;
    part.queue = RIG_QUEUE_COMPUTE;
    return part;
  }
  part.kind = RIG_PART_COPY;
  part.queue = RIG_QUEUE_COPY;
  part.u.copy.src = read_side(Field(p, 0));
  part.u.copy.dst = read_side(Field(p, 1));
  part.u.copy.rows = (uint64_t)Long_val(Field(p, 2));
  part.u.copy.row_bytes = (uint64_t)Long_val(Field(p, 3));
  part.u.copy.src_pitch = (uint64_t)Long_val(Field(p, 4));
  part.u.copy.dst_pitch = (uint64_t)Long_val(Field(p, 5));
  return part;
}

/* waits: an array of (word's host address, device, value). */
typedef struct built {
  rig_submission s;
  rig_wait* waits;
  rig_part* parts;
} built;

static int build(value waits, value parts, built* b) {
  const mlsize_t nw = Wosize_val(waits), np = Wosize_val(parts);
  b->waits = calloc(nw + 1, sizeof *b->waits);
  b->parts = calloc(np + 1, sizeof *b->parts);
  if (b->waits == NULL || b->parts == NULL) return 0;
  for (mlsize_t i = 0; i < nw; ++i) {
    const value w = Field(waits, i);
    b->waits[i].word = (const uint64_t*)(uintptr_t)Nativeint_val(Field(w, 0));
    b->waits[i].device = (uint64_t)Nativeint_val(Field(w, 1));
    b->waits[i].value = (uint64_t)Long_val(Field(w, 2));
  }
  for (mlsize_t i = 0; i < np; ++i) b->parts[i] = read_part(Field(parts, i));
  b->s.waits = b->waits;
  b->s.n_waits = (uint32_t)nw;
  b->s.parts = b->parts;
  b->s.n_parts = (uint32_t)np;
  return 1;
}

static void unbuild(built* b) {
  free(b->waits);
  free(b->parts);
}

/* room: fns is Rig_edge.c_functions { room; submit; commit; handle }. Never blocks. */
CAMLprim value rig_test_room(value fns, value waits, value parts) {
  CAMLparam3(fns, waits, parts);
  built b;
  if (!build(waits, parts, &b)) {
    unbuild(&b);
    caml_raise_out_of_memory();
  }
  const room_fn room = (room_fn)(uintptr_t)Nativeint_val(Field(fns, 0));
  const int answer = room((rig_proxy*)(uintptr_t)Nativeint_val(Field(fns, 3)), &b.s);
  unbuild(&b);
  CAMLreturn(Val_int(answer));
}

/* submit then commit, with the runtime released (submit may block while it sends); the
 * bigarrays stay rooted by the parameters and are outside the heap. (0, "") or (1, why). */
CAMLprim value rig_test_submit(value fns, value waits, value parts, value v) {
  CAMLparam4(fns, waits, parts, v);
  CAMLlocal2(result, text);
  built b;
  if (!build(waits, parts, &b)) {
    unbuild(&b);
    caml_raise_out_of_memory();
  }
  const submit_fn submit = (submit_fn)(uintptr_t)Nativeint_val(Field(fns, 1));
  const commit_fn commit = (commit_fn)(uintptr_t)Nativeint_val(Field(fns, 2));
  rig_proxy* d = (rig_proxy*)(uintptr_t)Nativeint_val(Field(fns, 3));
  const uint64_t value_ = (uint64_t)Long_val(v);
  const char* why = NULL;
  caml_release_runtime_system();
  const int rc = submit(d, &b.s, value_, &why);
  if (rc == RIG_COMMITTED) commit(d);
  caml_acquire_runtime_system();
  unbuild(&b);
  text = caml_copy_string(rc == RIG_COMMITTED || why == NULL ? "" : why);
  result = caml_alloc_tuple(2);
  Store_field(result, 0, Val_int(rc));
  Store_field(result, 1, text);
  CAMLreturn(result);
}
