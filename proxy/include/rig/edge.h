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
  RIG_PART_COPY = 1,  /**< a copy of bytes: the part's u.copy */
  RIG_PART_WORDS = 2, /**< a launch of rig.program code: the part's u.words (only the machine's host runs it) */
  RIG_PART_KERNEL = 3 /**< a GPU launch: no proxy runs it */
};

/** Queues of a proxy (its facts' queues). */
enum { RIG_QUEUE_COMPUTE = 0 /**< the queue "COMPUTE:0" */, RIG_QUEUE_COPY = 1 /**< the queue "COPY:0" */ };

/** One side of a copy: this process's memory by its host address (host != NULL), or a region
 * by the handle locate gave (host == NULL), plus a byte offset into the region. */
typedef struct rig_side {
  void* host;      /**< this process's memory at this address, or NULL for a region. A source
                       is read before submit returns; a destination is written before the word
                       shows the submission's value */
  uint64_t handle; /**< the region's handle (Location::handle, an agent object's id); read only
                       when host is NULL */
  uint64_t offset; /**< bytes into the region where row 0 starts; read only when host is NULL
                       (a host side starts at host) */
} rig_side;

/** rows rows of row_bytes bytes; row r lies at offset + r * pitch on each side. */
typedef struct rig_copy {
  rig_side src;       /**< where the bytes are read */
  rig_side dst;       /**< where the bytes are written */
  uint64_t rows;      /**< how many rows; 0 copies nothing (the copy fits and sends nothing) */
  uint64_t row_bytes; /**< bytes per row; 0 copies nothing */
  uint64_t src_pitch; /**< bytes from one row's start to the next on src; read only when rows > 1,
                           and then at least row_bytes (rows may not overlap) */
  uint64_t dst_pitch; /**< the same on dst */
} rig_copy;

/** A launch of function `function` (entry's answer) of image `image` with n_words words. */
typedef struct rig_words {
  uint64_t image;        /**< the loaded image's id (rig::remote::Image::id) */
  uint32_t function;     /**< the function's index in the image: Entry::function, entry's answer */
  uint32_t n_words;      /**< how many words the launch takes; the function's parameter count */
  const uint32_t* words; /**< the n_words words (a buffer's word: the low 32 bits of its object's
                              id); borrowed until submit returns, may be NULL when n_words is 0 */
} rig_words;

/** One part of a submission: a copy or a launch of words, on one of the proxy's queues. */
typedef struct rig_part {
  uint32_t kind;  /**< RIG_PART_* */
  uint32_t queue; /**< RIG_QUEUE_* */
  union {
    rig_copy copy;   /**< kind RIG_PART_COPY */
    rig_words words; /**< kind RIG_PART_WORDS */
  } u;               /**< the part itself, as kind says */
} rig_part;

/** Wait until the timeline word at `word` reaches `value`. `device` is the word's location's
 * address (for a proxy's word: the agent's device id); `word` its host address. */
typedef struct rig_wait {
  const uint64_t* word; /**< the timeline word's host address in this process */
  uint64_t device;      /**< the address of the word's location (Location::address) */
  uint64_t value;       /**< the wait holds once the word holds value or more */
} rig_wait;

/** The work of one value of a proxy's timeline: its parts, run in order once every wait holds.
 * The caller owns both arrays; submit borrows them until it returns. */
typedef struct rig_submission {
  const rig_wait* waits; /**< n_waits waits; may be NULL when n_waits is 0 */
  uint32_t n_waits;      /**< how many waits */
  uint32_t n_parts;      /**< how many parts; 0: a value with no work */
  const rig_part* parts; /**< n_parts parts, run in this order; may be NULL when n_parts is 0 */
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
