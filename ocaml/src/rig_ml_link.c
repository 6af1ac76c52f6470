/* Jobs and links (the page's Link): connect, accounts, fresh, endpoint, state, close. */
#include <stdlib.h>
#include <string.h>

#include "rig_ml.h"

void rig_ml_job_unref(rig_ml_job* j) {
  if (atomic_fetch_sub_explicit(&j->refs, 1, memory_order_acq_rel) != 1) return;
  rig_job_release(j->job); /* never blocks */
  free(j);
}

static void job_finalize(value v) {
  if (Rig_ml_job(v) != NULL) rig_ml_job_unref(Rig_ml_job(v));
}

static void link_finalize(value v) {
  if (Rig_ml_link(v)->job != NULL) rig_ml_job_unref(Rig_ml_link(v)->job);
}

static struct custom_operations job_ops = {
    "rig_remote.job",           job_finalize,
    custom_compare_default,     custom_hash_default,
    custom_serialize_default,   custom_deserialize_default,
    custom_compare_ext_default, custom_fixed_length_default};

static struct custom_operations link_ops = {
    "rig_remote.link",          link_finalize,
    custom_compare_default,     custom_hash_default,
    custom_serialize_default,   custom_deserialize_default,
    custom_compare_ext_default, custom_fixed_length_default};

/* Link.job (): a new job with no link. */
CAMLprim value rig_ml_job_create(value unit) {
  CAMLparam1(unit);
  CAMLlocal1(block);
  RIG_ML_TEXT(why);
  block = caml_alloc_custom(&job_ops, sizeof(rig_ml_job*), 0, 1);
  Rig_ml_job(block) = NULL;
  rig_ml_job* cell = malloc(sizeof *cell);
  if (cell == NULL) caml_raise_out_of_memory();
  const int rc = rig_job_create(&cell->job, &why);
  if (rc != RIG_OK) {
    free(cell);
    rig_ml_raise(rc, why_data);
  }
  atomic_init(&cell->refs, 1);
  Rig_ml_job(block) = cell;
  CAMLreturn(block);
}

/* Options from OCaml: (secret_file, stripes, stripe_min_bytes, backend, keepalive_ms,
 * silence_ms, poll_us, send_zc_bytes), each an option but backend (an int). */
static int int_option(value o, int32_t* out) {
  if (Is_some(o)) *out = (int32_t)Long_val(Some_val(o));
  return 0;
}

static void read_options(value o, rig_link_options* opts) {
  rig_link_options_init(opts);
  int_option(Field(o, 1), &opts->stripes);
  if (Is_some(Field(o, 2))) opts->stripe_min_bytes = (uint64_t)Long_val(Some_val(Field(o, 2)));
  opts->backend = (int32_t)Long_val(Field(o, 3));
  int_option(Field(o, 4), &opts->keepalive_ms);
  int_option(Field(o, 5), &opts->silence_ms);
  int_option(Field(o, 6), &opts->poll_us);
  if (Is_some(Field(o, 7))) opts->send_zc_bytes = (uint64_t)Long_val(Some_val(Field(o, 7)));
}

/* Link.connect: a link of job to the agent at endpoint; releases the runtime meanwhile. */
CAMLprim value rig_ml_link_connect(value job, value endpoint, value options) {
  CAMLparam3(job, endpoint, options);
  CAMLlocal1(block);
  RIG_ML_TEXT(why);
  block = caml_alloc_custom(&link_ops, sizeof(rig_ml_link), 0, 1);
  Rig_ml_link(block)->job = NULL;
  Rig_ml_link(block)->link = NULL;
  rig_ml_job* cell = Rig_ml_job(job);
  rig_link_options opts;
  read_options(options, &opts);
  const value secret = Field(options, 0);
  char* secret_file = Is_some(secret) ? rig_ml_strdup(Some_val(secret)) : NULL;
  char* where = rig_ml_strdup(endpoint);
  if (where == NULL || (Is_some(secret) && secret_file == NULL)) {
    free(where);
    free(secret_file);
    caml_raise_out_of_memory();
  }
  opts.secret_file = secret_file;
  atomic_fetch_add_explicit(&cell->refs, 1, memory_order_relaxed);
  rig_link* link = NULL;
  caml_release_runtime_system();
  const int rc = rig_job_connect(cell->job, where, &opts, &link, &why);
  caml_acquire_runtime_system();
  free(where);
  free(secret_file);
  if (rc != RIG_OK) {
    rig_ml_job_unref(cell);
    rig_ml_raise(rc, why_data);
  }
  Rig_ml_link(block)->job = cell;
  Rig_ml_link(block)->link = link;
  CAMLreturn(block);
}

/* The link's accounts: an array of (id, kind, budget, cache_bytes, reaches, name, arch). */
CAMLprim value rig_ml_link_accounts(value l) {
  CAMLparam1(l);
  CAMLlocal4(result, item, name, arch);
  const rig_link* link = Rig_ml_link(l)->link;
  uint32_t n = 0;
  rig_ml_check(rig_link_account_count(link, &n), "rig_remote: accounts");
  result = caml_alloc_tuple(n);
  for (uint32_t i = 0; i < n; ++i) {
    rig_account a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    rig_ml_check(rig_link_account(link, i, &a), "rig_remote: account");
    a.name[sizeof a.name - 1] = '\0';
    a.arch[sizeof a.arch - 1] = '\0';
    name = caml_copy_string(a.name);
    arch = caml_copy_string(a.arch);
    item = caml_alloc_tuple(7);
    Store_field(item, 0, Val_long(a.id));
    Store_field(item, 1, Val_long(a.kind));
    Store_field(item, 2, Val_long((intnat)a.budget));
    Store_field(item, 3, Val_long((intnat)a.cache_bytes));
    Store_field(item, 4, Val_long((intnat)a.reaches));
    Store_field(item, 5, name);
    Store_field(item, 6, arch);
    Store_field(result, i, item);
  }
  CAMLreturn(result);
}

/* Link.fresh: a new id of the job. */
CAMLprim value rig_ml_link_fresh(value l) {
  CAMLparam1(l);
  uint64_t id = 0;
  rig_ml_check(rig_link_fresh(Rig_ml_link(l)->link, &id), "rig_remote: fresh");
  CAMLreturn(caml_copy_int64((int64_t)id));
}

/* Link.endpoint: (the endpoint given, the address reached). */
CAMLprim value rig_ml_link_endpoint(value l) {
  CAMLparam1(l);
  CAMLlocal3(result, given, reached);
  RIG_ML_TEXT(endpoint);
  RIG_ML_TEXT(address);
  rig_ml_check(rig_link_endpoint(Rig_ml_link(l)->link, &endpoint, &address), "rig_remote: endpoint");
  given = caml_copy_string(endpoint_data);
  reached = caml_copy_string(address_data);
  result = caml_alloc_tuple(2);
  Store_field(result, 0, given);
  Store_field(result, 1, reached);
  CAMLreturn(result);
}

/* Link.state: (0 running | 1 failed | 2 closed, why). */
CAMLprim value rig_ml_job_state(value job) {
  CAMLparam1(job);
  CAMLlocal2(result, text);
  RIG_ML_TEXT(why);
  int state = 0;
  rig_ml_check(rig_job_state(Rig_ml_job(job)->job, &state, &why), "rig_remote: state");
  text = caml_copy_string(why_data);
  result = caml_alloc_tuple(2);
  Store_field(result, 0, Val_int(state));
  Store_field(result, 1, text);
  CAMLreturn(result);
}

/* Link.close: begins the job's close. */
CAMLprim value rig_ml_job_close(value job) {
  CAMLparam1(job);
  rig_job* j = Rig_ml_job(job)->job;
  caml_release_runtime_system();
  const int rc = rig_job_close(j);
  caml_acquire_runtime_system();
  rig_ml_check(rc, "rig_remote: close");
  CAMLreturn(Val_unit);
}
