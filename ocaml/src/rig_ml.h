/* Shared by the stubs of Rig_remote_proxy: the custom blocks' contents, texts and results. */
#ifndef RIG_ML_H
#define RIG_ML_H

#define CAML_NAME_SPACE
#include <caml/alloc.h>
#include <caml/custom.h>
#include <caml/fail.h>
#include <caml/memory.h>
#include <caml/mlvalues.h>
#include <caml/threads.h>
#include <stdatomic.h>
#include <stdint.h>

#include "rig/remote.h"

/* A timeline word: 8 aligned bytes outside the OCaml heap, shared by the Word.t value and each
 * proxy made with it; freed when the last of them lets go. */
typedef struct rig_ml_word {
  uint64_t word; /* first: 8-aligned, as malloc aligns the cell */
  atomic_long refs;
} rig_ml_word;

/* A job's handle, shared by the Link.job value and each Link.t of the job. */
typedef struct rig_ml_job {
  rig_job* job;
  atomic_long refs;
} rig_ml_job;

/* The contents of a proxy's custom block. */
typedef struct rig_ml_proxy {
  rig_proxy* proxy;  /* NULL until rig_device_make succeeded */
  rig_ml_word* word; /* the word make was given; one reference */
} rig_ml_proxy;

/* The contents of a link's custom block. */
typedef struct rig_ml_link {
  rig_ml_job* job; /* one reference; NULL until connect succeeded */
  rig_link* link;
} rig_ml_link;

#define Rig_ml_proxy(v) ((rig_ml_proxy*)Data_custom_val(v))
#define Rig_ml_link(v) ((rig_ml_link*)Data_custom_val(v))
#define Rig_ml_job(v) (*(rig_ml_job**)Data_custom_val(v))
#define Rig_ml_word(v) (*(rig_ml_word**)Data_custom_val(v))
#define Rig_ml_image(v) (*(rig_image**)Data_custom_val(v))
#define Rig_ml_region(v) ((rig_region*)Data_custom_val(v))

/* A text the library copies out, on the caller's stack. */
#define RIG_ML_TEXT_BYTES 4096
#define RIG_ML_TEXT(name)                 \
  char name##_data[RIG_ML_TEXT_BYTES];    \
  rig_text name = {name##_data, sizeof name##_data, 0}; \
  name##_data[0] = '\0'

/* Raises what rc says (Fault, Invalid_argument, Failure), with why as its text. Call only
 * with the runtime held and no C resource left to give back. */
_Noreturn void rig_ml_raise(int rc, const char* why);
/* Raises unless rc is RIG_OK. */
void rig_ml_check(int rc, const char* why);

/* A new region value holding a copy of *r. */
value rig_ml_region_alloc(const rig_region* r);

void rig_ml_word_ref(rig_ml_word* w);
void rig_ml_word_unref(rig_ml_word* w);
void rig_ml_job_unref(rig_ml_job* j);

/* A malloc'd copy of an OCaml string (with its NUL), or NULL for no memory. */
char* rig_ml_strdup(value s);

#endif
