/* The example's C side, as rig's would be: one copy through the proxy's C functions (room,
 * submit, commit), reached by the pointers Rig_remote_proxy.c_functions gives. */
#define CAML_NAME_SPACE
#include <caml/bigarray.h>
#include <caml/fail.h>
#include <caml/memory.h>
#include <caml/mlvalues.h>
#include <caml/threads.h>
#include <string.h>

#include "rig/edge.h"

/* copy fns buffer handle to_region value: 0 once submitted, 1 if room says later;
 * Failure if the proxy can never run it or the submit failed. */
CAMLprim value example_copy(value fns, value buffer, value handle, value to_region, value v) {
  CAMLparam5(fns, buffer, handle, to_region, v);
  int (*room)(rig_proxy*, const rig_submission*) = (void*)Nativeint_val(Field(fns, 0));
  int (*submit)(rig_proxy*, const rig_submission*, uint64_t, const char**) = (void*)Nativeint_val(Field(fns, 1));
  void (*commit)(rig_proxy*) = (void*)Nativeint_val(Field(fns, 2));
  rig_proxy* d = (rig_proxy*)Nativeint_val(Field(fns, 3));
  rig_side host = {Caml_ba_data_val(buffer), 0, 0};
  rig_side region = {NULL, (uint64_t)Nativeint_val(handle), 0};
  const uint64_t n = Caml_ba_array_val(buffer)->dim[0];
  rig_part part;
  memset(&part, 0, sizeof part);
  part.kind = RIG_PART_COPY;
  part.queue = RIG_QUEUE_COPY;
  part.u.copy.src = Bool_val(to_region) ? host : region;
  part.u.copy.dst = Bool_val(to_region) ? region : host;
  part.u.copy.rows = 1;
  part.u.copy.row_bytes = n;
  rig_submission s = {NULL, 0, 1, &part};
  const int fits = room(d, &s);
  if (fits == RIG_LATER) CAMLreturn(Val_int(1));
  if (fits != RIG_FITS) caml_failwith("room: the proxy cannot run this copy");
  const char* why = NULL;
  const uint64_t value_ = (uint64_t)Long_val(v);
  caml_release_runtime_system(); /* submit sends, so it may block */
  const int rc = submit(d, &s, value_, &why);
  if (rc == RIG_COMMITTED) commit(d);
  caml_acquire_runtime_system();
  if (rc != RIG_COMMITTED) caml_failwith(why != NULL ? why : "submit failed");
  CAMLreturn(Val_int(0));
}
