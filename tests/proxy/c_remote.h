/* The C ABI's tests, written in C against rig/remote.h and rig/edge.h alone (c_remote*.c);
 * tests/proxy/c_remote_test.cc runs each against a real rig-agent. Each returns NULL when it
 * passes, else the failed check's file, line and text. */
#ifndef RIG_TESTS_C_REMOTE_H
#define RIG_TESTS_C_REMOTE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a test needs of its surroundings. */
typedef struct c_env {
  const char* endpoint;        /* the agent's HOST:PORT; it opened devices 1 and 2 */
  const void* program;         /* an assembled rig.program with function "counter" (1 param) */
  size_t program_bytes;
  void (*kill_agent)(void* arg); /* ends the agent (SIGKILL) */
  void* kill_arg;
} c_env;

const char* c_remote_accounts(const c_env* env);
const char* c_remote_make_rules(const c_env* env);
const char* c_remote_options(const c_env* env);
const char* c_remote_memory(const c_env* env);
const char* c_remote_copies(const c_env* env, uint64_t bytes);
const char* c_remote_strided_edges(const c_env* env);
const char* c_remote_room(const c_env* env);
const char* c_remote_sleep_bound(const c_env* env);
const char* c_remote_stop(const c_env* env);
const char* c_remote_release_pending(const c_env* env);
const char* c_remote_code(const c_env* env);
const char* c_remote_closed(const c_env* env);
const char* c_remote_agent_killed(const c_env* env);
const char* c_remote_bad_handles(const c_env* env);
const char* c_remote_texts(const c_env* env);
const char* c_remote_threads(const c_env* env);

#ifdef __cplusplus
}
#endif

#endif /* RIG_TESTS_C_REMOTE_H */
