/* The C functions of a rig driver, as a proxy implements them: room, submit and commit, called
 * on the runtime's hot path, one at a time per proxy. This header compiles as C11 and C++. */
#ifndef RIG_EDGE_H
#define RIG_EDGE_H

#include <stddef.h>
#include <stdint.h>

#include "rig/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/** room's answers. */
enum {
  RIG_FITS = 0,  /**< submit may take the submission now */
  RIG_LATER = 1, /**< not now: ask again once earlier work is done */
  RIG_NEVER = 2, /**< this driver cannot run the submission */
  RIG_GROW = 3   /**< the queues need a growth first (a proxy never answers it) */
};

/** submit's answers. */
enum {
  RIG_COMMITTED = 0, /**< the work is sent; its value will be reported done */
  RIG_FAILED = 1     /**< nothing of it will run; *why says why */
};

/** Kinds of parts. A proxy runs copies, and the machine's host also runs words. */
enum {
  RIG_PART_COPY = 1,
  RIG_PART_WORDS = 2,
  RIG_PART_KERNEL = 3 /**< a GPU launch: no proxy runs it */
};

/** Queues of a proxy (its facts' queues). */
enum { RIG_QUEUE_COMPUTE = 0, RIG_QUEUE_COPY = 1 };

/** One side of a copy: this process's memory by its host address (host != NULL), or a region
 * by the handle locate gave (host == NULL), plus a byte offset into the region. */
typedef struct rig_side {
  void* host;
  uint64_t handle;
  uint64_t offset;
} rig_side;

/** rows rows of row_bytes bytes; row r lies at offset + r * pitch on each side. */
typedef struct rig_copy {
  rig_side src;
  rig_side dst;
  uint64_t rows;
  uint64_t row_bytes;
  uint64_t src_pitch;
  uint64_t dst_pitch;
} rig_copy;

/** A launch of function `function` (entry's answer) of image `image` with n_words words. */
typedef struct rig_words {
  uint64_t image;
  uint32_t function;
  uint32_t n_words;
  const uint32_t* words;
} rig_words;

typedef struct rig_part {
  uint32_t kind;  /**< RIG_PART_* */
  uint32_t queue; /**< RIG_QUEUE_* */
  union {
    rig_copy copy;
    rig_words words;
  } u;
} rig_part;

/** Wait until the timeline word at `word` reaches `value`. `device` is the word's location's
 * address (for a proxy's word: the agent's device id); `word` its host address. */
typedef struct rig_wait {
  const uint64_t* word;
  uint64_t device;
  uint64_t value;
} rig_wait;

typedef struct rig_submission {
  const rig_wait* waits;
  uint32_t n_waits;
  uint32_t n_parts;
  const rig_part* parts;
} rig_submission;

/** A proxy, as the runtime's C functions see it (a rig::remote::Proxy). */
typedef struct rig_proxy rig_proxy;

/** Whether d can take s now. Never blocks, never fails. */
RIG_API int rig_proxy_room(rig_proxy* d, const rig_submission* s);

/** Sends s as the work of value `value` of d's timeline, and returns RIG_COMMITTED once its
 * message is sent, or RIG_FAILED with *why set to a NUL-terminated reason that stays valid
 * until the next submit on d. Borrows s and the memory its copies read until it returns. */
RIG_API int rig_proxy_submit(rig_proxy* d, const rig_submission* s, uint64_t value, const char** why);

/** Does nothing: each submit sends its own message. */
RIG_API void rig_proxy_commit(rig_proxy* d);

#ifdef __cplusplus
}
#endif

#endif /**< RIG_EDGE_H */
