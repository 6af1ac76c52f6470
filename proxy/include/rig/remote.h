/* The C ABI of rig-remote: jobs, links and proxies (the page's Rig_remote_proxy, with its Link),
 * for a runtime in any language. The hot path (room, submit, commit) is rig/edge.h, on the same
 * rig_proxy handle. This header compiles as C99, C11 and C++; no exception crosses it.
 *
 * Results. Every function that can fail returns an int of enum rig_result: RIG_OK, or one of the
 * page's outcomes (RIG_NONE, RIG_ERROR, RIG_ABSENT, RIG_NO_MEMORY, RIG_SHORT), or one of its
 * exceptions (RIG_FAULT: the page's Fault, with the job's root cause or "the job is closed";
 * RIG_INVALID_ARGUMENT: the page's Invalid_argument, with the reason), or RIG_BAD_HANDLE for a
 * null handle or one already released. A text that goes with a result (a fault's why, an error's
 * reason) is copied into the caller's rig_text, which may be NULL where the text is not wanted.
 *
 * Threads. Unless a function says otherwise, any thread may call it at any time, several at once.
 * Handles: a job is the caller's until rig_job_release; a link lives as long as its job; a proxy
 * is the caller's until rig_proxy_release; an image until rig_image_release. Using a handle after
 * its release is answered RIG_BAD_HANDLE (not for the hot path's room, submit and commit, nor
 * signaled, which check nothing but null). docs/SEMANTICS.md ("The C ABI") records the
 * decisions behind this header. */
#ifndef RIG_REMOTE_H
#define RIG_REMOTE_H

#include <stddef.h>
#include <stdint.h>

#include "rig/edge.h"
#include "rig/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The version of this ABI: functions are only added within a major version; a major version
 * bumps the shared library's soname (docs/PACKAGING.md). */
#define RIG_REMOTE_ABI_MAJOR 1
#define RIG_REMOTE_ABI_MINOR 1

/** What the functions of this header return. */
enum rig_result {
  RIG_OK = 0,               /**< done, with the result in the out-parameters */
  RIG_NONE = 1,             /**< the page's None: no region (alloc, map_peer, map_host) */
  RIG_ERROR = 2,            /**< the page's Error why (dma, image), or a connect that failed; why says why */
  RIG_ABSENT = 3,           /**< entry's Absent: the image has no such function, or the agent refused */
  RIG_NO_MEMORY = 4,        /**< entry's No_memory n: *bytes holds n */
  RIG_SHORT = 5,            /**< grow's Short n (a proxy never answers it) */
  RIG_FAULT = 6,            /**< the page's Fault why: the job failed (why: its root cause) or is closed */
  RIG_INVALID_ARGUMENT = 7, /**< the page's Invalid_argument: a precondition broken; why says which */
  RIG_BAD_HANDLE = 8        /**< a null handle, or one already released */
};

/** A text the library copies out: the caller gives data and size (bytes it may write); the
 * library writes at most size bytes, NUL-terminated (truncated if it must, empty if size is 0)
 * and sets needed to the whole text's length plus one. */
typedef struct rig_text {
  char* data;    /**< where the text goes; may be NULL when size is 0 */
  size_t size;   /**< bytes at data */
  size_t needed; /**< set by the library: strlen of the whole text + 1 */
} rig_text;

/** A job: this process and the agents it connected to (one link each). Fails as a whole. */
typedef struct rig_job rig_job;
/** A link: this process's end of its connections to one machine's agent (the page's Link.t). */
typedef struct rig_link rig_link;
/** Loaded code of the machine's host (the page's image). */
typedef struct rig_image rig_image;

/** The socket backends a link may use (rig_link_options.backend). */
enum rig_backend {
  RIG_BACKEND_DEFAULT = 0, /**< RIG_SOCKET_BACKEND if set, else io_uring where the kernel allows it */
  RIG_BACKEND_URING = 1,   /**< io_uring */
  RIG_BACKEND_PLAIN = 2    /**< blocking sockets */
};

/** Where submit packs strided rows into: allocate gives bytes for one submit (or NULL: submit
 * answers "out of memory for a hand-over"), release gives them back once sent. */
typedef struct rig_staging_allocator {
  void* (*allocate)(size_t bytes); /**< NULL: the connection's own staging pool */
  void (*release)(void* p);        /**< gives back what allocate gave */
} rig_staging_allocator;

/** How rig_job_connect makes a link. rig_link_options_init sets every default. */
typedef struct rig_link_options {
  size_t size;                   /**< sizeof(rig_link_options), set by rig_link_options_init */
  const char* secret_file;       /**< NULL or "": RIG_SECRET_FILE, else RIG_SECRET, else none */
  int32_t stripes;               /**< extra data connections; -1: automatic (none on loopback) */
  uint64_t stripe_min_bytes;     /**< copies of fewer bytes stay on the job's connection */
  int32_t backend;               /**< enum rig_backend */
  int32_t keepalive_ms;          /**< ping the agent after this long without a byte from it */
  int32_t silence_ms;            /**< fail the job after this long without a byte from the agent */
  int32_t poll_us;               /**< the receiving thread's spin before it sleeps; -1: RIG_POLL_US or 0 */
  uint64_t send_zc_bytes;        /**< zero-copy sends from this size; UINT64_MAX: automatic; 0: never */
  rig_staging_allocator staging; /**< both NULL: the connection's staging pool */
  const char* agent_name;        /**< NULL or "": any agent; else the name it must give (rig-agent --name); ABI 1.1 */
} rig_link_options;

/** The agent's answer for a device it opened (the page's Wire.account). */
typedef struct rig_account {
  size_t size;          /**< sizeof(rig_account), set by the caller; the library fills no more */
  uint32_t id;          /**< the agent's device id; 0 is the machine's host */
  uint32_t kind;        /**< 0: the machine's host, 1: a device (simulated or a GPU: see arch) */
  uint64_t budget;      /**< the bytes the job may hold on it */
  uint64_t cache_bytes; /**< its cache's size in bytes (0 where unknown) */
  uint64_t reaches;     /**< bit i: this device reaches the own memory of device i */
  char name[32];        /**< NUL-terminated: "host", "sim1", "gpu1" */
  char arch[32];        /**< NUL-terminated: "sim", "x86_64", "sm_90" */
} rig_account;

/** The capability a proxy is described with (Rig_remote_abi.t): Host _ or Device { id }. */
typedef struct rig_capability {
  uint32_t kind; /**< RIG_CAPABILITY_HOST or RIG_CAPABILITY_DEVICE */
  uint32_t id;   /**< Device's id; unused for Host */
} rig_capability;
/** rig_capability's kinds. */
enum {
  RIG_CAPABILITY_HOST = 0,  /**< Host _: the machine's host (account 0) */
  RIG_CAPABILITY_DEVICE = 1 /**< Device { id }: the agent's device id */
};

/** The kinds of a device's memory (Rig_edge.memory). */
enum rig_memory {
  RIG_MEMORY_DEVICE = 0, /**< the device's own memory */
  RIG_MEMORY_HOST = 1    /**< host memory the device reaches */
};

/** A region (a value, copied freely): an agent object of the job, or a proxy's timeline word.
 * The library reads only what it wrote; a region it did not make is the caller's mistake. */
typedef struct rig_region {
  uint32_t kind;         /**< RIG_REGION_OBJECT or RIG_REGION_WORD */
  uint32_t device;       /**< the agent's device that holds it, or whose word it is */
  uint64_t id;           /**< the object's id (Link.fresh); 0 for a word */
  uint64_t bytes;        /**< alloc's n, or 8 for a word */
  uint64_t* word;        /**< a word's address in this process; NULL for an object */
  const rig_link* link;  /**< the link whose job made it */
} rig_region;
/** rig_region's kinds. */
enum {
  RIG_REGION_OBJECT = 0, /**< an agent object of the job, by its id */
  RIG_REGION_WORD = 1    /**< a proxy's timeline word, by its address */
};

/** Where a region lies (Rig_edge.location): a word's device id as address, its host address as
 * host; an object's id as handle. */
typedef struct rig_location {
  uint32_t has_address; /**< 1: address is Some */
  uint32_t has_host;    /**< 1: host is Some */
  uint64_t address;     /**< a word's device id on the agent */
  uint64_t host;        /**< a word's host address */
  uint64_t handle;      /**< an object's id; 0 for a word */
} rig_location;

/** A proxy's facts (Rig_edge.facts; the page's table). Texts are the library's, static for the
 * proxy's life. */
typedef struct rig_facts {
  size_t size;               /**< sizeof(rig_facts), set by the caller */
  char arch[32];             /**< the account's arch */
  uint64_t budget;           /**< the account's budget */
  uint32_t n_queues;         /**< 2: "COMPUTE:0" (RIG_QUEUE_COMPUTE) and "COPY:0" (RIG_QUEUE_COPY) */
  uint32_t copy_engine;      /**< 1: Some 1 on the queue "COPY:0" */
  uint32_t completion;       /**< 0: Host */
  uint32_t waits_hosts;      /**< 1: waits on host words are taken */
  uint64_t waits_most;       /**< UINT64_MAX: max_int */
  uint32_t may_block;        /**< 1 */
  uint32_t has_hang_ms;      /**< 0: None */
  uint64_t hang_ms;          /**< unused while has_hang_ms is 0 */
  uint32_t maps_host;        /**< 0 */
  uint32_t host_addresses;   /**< 0 */
  uint64_t cache_bytes;      /**< the account's cache bytes */
  rig_capability capability; /**< the capability the proxy was described with */
  rig_region word;           /**< the word make was given, as a region */
  uint32_t has_bus;          /**< 0: None */
  uint32_t reserved;         /**< 0 */
} rig_facts;

/** The page's `device l a c`: which proxy to make. Describing registers nothing and sends
 * nothing; rig_device_make does the registering. */
typedef struct rig_device {
  size_t size;               /**< sizeof(rig_device), set by the caller */
  rig_link* link;            /**< l */
  uint32_t account;          /**< a's id: an account of l (rig_link_account) */
  rig_capability capability; /**< c */
} rig_device;

/** The version of the library's ABI: major * 1000 + minor. Any thread. */
RIG_API uint32_t rig_remote_abi_version(void);

/* ---- jobs and links (the page's Link) ---- */

/** Sets every field of *o to its default (size included). Any thread. */
RIG_API void rig_link_options_init(rig_link_options* o);

/** A new job with no link: *job, RIG_OK; RIG_FAULT with "out of memory" if there is none. */
RIG_API int rig_job_create(rig_job** job, rig_text* why);

/** Connects the job to the agent at endpoint ("HOST:PORT", "[V6]:PORT"), does the handshake and
 * learns its accounts: *link, which lives as long as the job. options may be NULL (defaults).
 * RIG_ERROR when the agent cannot be reached or the handshake fails, RIG_INVALID_ARGUMENT for a
 * malformed endpoint or options or a RIG_* variable with a value it does not take (why names it),
 * RIG_FAULT once the job has failed or is closed. Blocks for the
 * connect and the handshake. */
RIG_API int rig_job_connect(rig_job* job, const char* endpoint, const rig_link_options* options,
                            rig_link** link, rig_text* why);

/** Begins the job's close (the page's Link.close): calls that ask an agent then answer
 * RIG_FAULT "the job is closed", each agent frees what the job held, the receiving threads end.
 * Idempotent; waits for nothing. */
RIG_API int rig_job_close(rig_job* job);

/** Whether the job is over: 0 while it runs, 1 once it has failed, 2 once its close has begun
 * (and it did not fail first). why gets its root cause, "the job is closed", or "". */
RIG_API int rig_job_state(const rig_job* job, int* state, rig_text* why);

/** Gives the handle back; never blocks. A job whose proxies are all released and whose handle is
 * released ends: its close begins if it had not, and its threads are joined by the library
 * (on a thread of its own, so the caller does not wait). */
RIG_API void rig_job_release(rig_job* job);

/** How many accounts the link's agent gave (the host first, then each device by id). */
RIG_API int rig_link_account_count(const rig_link* link, uint32_t* count);
/** The index-th account (0 <= index < count) into *account, up to account->size bytes. */
RIG_API int rig_link_account(const rig_link* link, uint32_t index, rig_account* account);
/** A new id of the job naming an agent object (the page's Link.fresh). */
RIG_API int rig_link_fresh(rig_link* link, uint64_t* id);
/** The endpoint given to connect, and the numeric address it reached. */
RIG_API int rig_link_endpoint(const rig_link* link, rig_text* endpoint, rig_text* address);

/* ---- proxies (the page's Rig_remote_proxy) ---- */

/** The page's make ~word: registers the proxy of d on d->link with the 8 bytes at word as its
 * timeline word; sends nothing; its values start after the value the word holds. The word must
 * stay until rig_proxy_release says it is quiet, or the job has ended. RIG_INVALID_ARGUMENT for
 * a misaligned word, an account the link lacks, a Host capability of an account whose id is not
 * 0, a Device capability whose id is not the account's, or a link that has a proxy of the
 * device; a make that fails registers nothing. */
RIG_API int rig_device_make(const rig_device* d, uint64_t* word, rig_proxy** proxy, rig_text* why);

/** Forgets the handle; never blocks and sends nothing. A proxy not yet stopped is stopped first
 * (rig_proxy_stop). Returns 1 if nothing of the proxy writes its word any more (the word may be
 * freed), 0 if a copy's bytes may still land and the word advance (keep it until the job ends),
 * or RIG_BAD_HANDLE's negation (-RIG_BAD_HANDLE) for a bad handle. */
RIG_API int rig_proxy_release(rig_proxy* d);

/** The driver's identity (the page's key): proxies of this library share one. */
RIG_API const void* rig_proxy_key(void);
/** The page's facts, up to facts->size bytes. */
RIG_API int rig_proxy_facts(const rig_proxy* d, rig_facts* facts);
/** The device's name, as its account gives it. */
RIG_API int rig_proxy_name(const rig_proxy* d, rig_text* name);

/** alloc d m n: RIG_OK with *region, RIG_NONE if the agent lacks the room or refuses,
 * RIG_INVALID_ARGUMENT unless n is a positive multiple of 4, RIG_FAULT once the job is over.
 * Blocks for the agent's answer. Counted. */
RIG_API int rig_proxy_alloc(rig_proxy* d, uint32_t memory, uint64_t n, rig_region* region, rig_text* why);
/** free d r: sends the release of r's object after every message sent before it (nothing for a
 * word, nothing once the job has failed). May block while the connection's send turn is held. */
RIG_API int rig_proxy_free(rig_proxy* d, const rig_region* region);
/** locate r. Any thread; never blocks. */
RIG_API int rig_region_locate(const rig_region* region, rig_location* location);
/** peer d d2 into *yes (0 or 1), from what the handshake gave; never blocks. */
RIG_API int rig_proxy_peer(const rig_proxy* d, const rig_proxy* d2, int* yes);
/** map_peer d d2 r: RIG_OK with *mapped, RIG_NONE (two links, or the agent cannot or refuses),
 * RIG_FAULT if it asks and the job is over. Blocks for the agent's answer. Counted. */
RIG_API int rig_proxy_map_peer(rig_proxy* d, const rig_proxy* d2, const rig_region* region,
                               rig_region* mapped, rig_text* why);
/** map_host d p n: always RIG_NONE (a proxy does not declare maps_host). */
RIG_API int rig_proxy_map_host(rig_proxy* d, uintptr_t p, uint64_t n, rig_region* mapped);
/** dma d r ~fn: always RIG_ERROR, why naming the reason (the memory is another machine's). */
RIG_API int rig_proxy_dma(rig_proxy* d, const rig_region* region, const char* fn, rig_text* why);

/** image d b: RIG_OK with *image (loaded on the agent's host), RIG_ERROR with the reason it is
 * refused (on any proxy but the host: it loads no code), RIG_FAULT on the host once the job is
 * over. Blocks for the agent's answer. Counted. */
RIG_API int rig_proxy_image(rig_proxy* d, const void* binary, size_t bytes, rig_image** image, rig_text* why);
/** entry i f: RIG_OK with *function (the index a words part names), RIG_ABSENT,
 * RIG_NO_MEMORY with *bytes, RIG_INVALID_ARGUMENT with the agent's reason, RIG_FAULT once the
 * job is over. The first call for f blocks for the agent's answer. Counted. */
RIG_API int rig_image_entry(rig_image* image, const char* f, uint32_t* function, uint64_t* bytes, rig_text* why);
/** The image object's id, which a words part names (rig_words.image); 0 for a bad handle. */
RIG_API uint64_t rig_image_id(const rig_image* image);
/** prepare i f: may start what entry makes; reports nothing (RIG_OK or RIG_BAD_HANDLE only). */
RIG_API int rig_image_prepare(rig_image* image, const char* f);
/** unload d i: sends the release of the image after every message sent before it. */
RIG_API int rig_proxy_unload(rig_proxy* d, rig_image* image);
/** Forgets the image's handle (after unload, or never loaded again); never blocks, sends nothing. */
RIG_API void rig_image_release(rig_image* image);

/** grow d: always RIG_OK (Grown): a proxy's room never answers RIG_GROW. */
RIG_API int rig_proxy_grow(rig_proxy* d, uint64_t* short_bytes);

/** signaled d: the word's value, read with acquire order. Never blocks; checks only for null
 * (answers 0). Any thread. */
RIG_API uint64_t rig_proxy_signaled(const rig_proxy* d);
/** sleep d ~seen ~still_ms: RIG_OK once the word differs from seen (at once if it does), after
 * still_ms milliseconds, or when the job's close begins; RIG_FAULT once the job has failed. */
RIG_API int rig_proxy_sleep(rig_proxy* d, uint64_t seen, uint64_t still_ms, rig_text* why);
/** stop d ~fault: writes the last value given to submit into the word once no copy's bytes may
 * still land; waits for nothing; fault (may be NULL) is ignored. Call with no counted call of d
 * in flight (the runtime's rule). */
RIG_API int rig_proxy_stop(rig_proxy* d, const char* fault);
/** capability d: the record the proxy was described with. */
RIG_API int rig_proxy_capability(const rig_proxy* d, rig_capability* capability);
/** The link a proxy sends on. */
RIG_API int rig_proxy_link(const rig_proxy* d, rig_link** link);

#ifdef __cplusplus
}
#endif

#endif /* RIG_REMOTE_H */
