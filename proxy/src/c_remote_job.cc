// rig/remote.h: jobs and links. Each function is an exception barrier (c_abi::guarded).
#include <cstring>
#include <string>

#include "c_handles.h"
#include "rig/remote.h"
#include "rig/remote/job.h"
#include "rig/remote/link.h"

namespace ra = rig::remote;
using namespace rig::remote::c_abi;  // the ABI's handles, texts and barrier (c_handles.h)

namespace {

// Whether the caller's struct of `size` bytes holds the member that ends at `end`.
constexpr bool holds(std::size_t size, std::size_t end) { return size >= end; }
#define RIG_HOLDS(o, member) holds((o)->size, offsetof(rig_link_options, member) + sizeof((o)->member))

ra::LinkOptions link_options(const rig_link_options* o) {
  ra::LinkOptions opts;
  if (o == nullptr) return opts;
  if (o->size < sizeof(std::size_t)) throw std::invalid_argument("rig_link_options: size is not set");
  if (RIG_HOLDS(o, secret_file) && o->secret_file != nullptr) opts.secret_file = o->secret_file;
  if (RIG_HOLDS(o, stripes)) {
    if (o->stripes < -1) throw std::invalid_argument("rig_link_options: stripes is below -1");
    opts.stripes = o->stripes == -1 ? ra::LinkOptions::kAuto : o->stripes;
  }
  if (RIG_HOLDS(o, stripe_min_bytes)) opts.stripe_min_bytes = o->stripe_min_bytes;
  if (RIG_HOLDS(o, backend)) {
    switch (o->backend) {
      case RIG_BACKEND_DEFAULT: break;
      case RIG_BACKEND_URING: opts.backend = ra::Backend::kUring; break;
      case RIG_BACKEND_PLAIN: opts.backend = ra::Backend::kPlain; break;
      default: throw std::invalid_argument("rig_link_options: backend " + std::to_string(o->backend) + " is none of rig_backend");
    }
  }
  if (RIG_HOLDS(o, keepalive_ms)) opts.keepalive_ms = o->keepalive_ms;
  if (RIG_HOLDS(o, silence_ms)) opts.silence_ms = o->silence_ms;
  if (opts.keepalive_ms <= 0 || opts.silence_ms <= 0) {
    throw std::invalid_argument("rig_link_options: keepalive_ms and silence_ms must be positive");
  }
  if (RIG_HOLDS(o, poll_us) && o->poll_us != -1) {
    if (o->poll_us < 0) throw std::invalid_argument("rig_link_options: poll_us is below -1");
    opts.poll_us = o->poll_us;
  }
  if (RIG_HOLDS(o, send_zc_bytes)) {
    opts.send_zc_bytes = o->send_zc_bytes == UINT64_MAX ? ra::LinkOptions::kSendZcAuto : o->send_zc_bytes;
  }
  if (RIG_HOLDS(o, staging)) {
    if ((o->staging.allocate == nullptr) != (o->staging.release == nullptr)) {
      throw std::invalid_argument("rig_link_options: staging needs both allocate and release, or neither");
    }
    opts.staging.allocate = o->staging.allocate;
    opts.staging.release = o->staging.release;
  }
  if (RIG_HOLDS(o, agent_name) && o->agent_name != nullptr) opts.agent_name = o->agent_name;
  return opts;
}

}  // namespace

extern "C" {

uint32_t rig_remote_abi_version(void) { return RIG_REMOTE_ABI_MAJOR * 1000 + RIG_REMOTE_ABI_MINOR; }

void rig_link_options_init(rig_link_options* o) {
  if (o == nullptr) return;
  std::memset(o, 0, sizeof *o);
  o->size = sizeof *o;
  o->stripes = -1;
  o->stripe_min_bytes = 1u << 20;
  o->backend = RIG_BACKEND_DEFAULT;
  o->keepalive_ms = 1000;
  o->silence_ms = 30000;
  o->poll_us = -1;
  o->send_zc_bytes = UINT64_MAX;
}

int rig_job_create(rig_job** job, rig_text* why) {
  if (job == nullptr) return bad_handle(why, "rig_job_create: job is NULL");
  return guarded(why, [&] {
    auto handle = std::make_unique<rig_job>();
    handle->job = ra::Job::create();
    Handles::add(handle.get(), HandleKind::kJob);
    *job = handle.release();
    return RIG_OK;
  });
}

int rig_job_connect(rig_job* job, const char* endpoint, const rig_link_options* options,
                    rig_link** link, rig_text* why) {
  ra::Job* j = job_of(job);
  if (j == nullptr) return bad_handle(why, "rig_job_connect: not a live job");
  if (endpoint == nullptr || link == nullptr) {
    put_text(why, "rig_job_connect: endpoint and link must not be NULL");
    return RIG_INVALID_ARGUMENT;
  }
  return guarded(why, [&] {
    const ra::LinkOptions opts = link_options(options);
    ra::Link& made = j->connect(endpoint, opts);
    Handles::add(&made, HandleKind::kLink);
    *link = reinterpret_cast<rig_link*>(&made);
    return RIG_OK;
  });
}

int rig_job_close(rig_job* job) {
  ra::Job* j = job_of(job);
  if (j == nullptr) return RIG_BAD_HANDLE;
  return guarded(nullptr, [&] {
    j->close();
    return RIG_OK;
  });
}

int rig_job_state(const rig_job* job, int* state, rig_text* why) {
  const ra::Job* j = job_of(job);
  if (j == nullptr) return bad_handle(why, "rig_job_state: not a live job");
  return guarded(why, [&] {
    if (state != nullptr) *state = j->failed() ? 1 : j->closing() ? 2 : 0;
    put_text(why, j->fault_text());
    return RIG_OK;
  });
}

void rig_job_release(rig_job* job) {
  if (!Handles::remove(job, HandleKind::kJob)) return;
  drop(std::move(job->job));
  delete job;
}

// The link functions run inside Handles::while_live: a link may end on the reaper thread.
int rig_link_account_count(const rig_link* link, uint32_t* count) {
  return Handles::while_live(link, HandleKind::kLink, RIG_BAD_HANDLE, [&] {
    if (count != nullptr) *count = static_cast<uint32_t>(link_of_locked(link)->accounts().size());
    return RIG_OK;
  });
}

int rig_link_account(const rig_link* link, uint32_t index, rig_account* account) {
  return Handles::while_live(link, HandleKind::kLink, RIG_BAD_HANDLE, [&] {
    const ra::Link* l = link_of_locked(link);
    if (account == nullptr || index >= l->accounts().size()) return RIG_INVALID_ARGUMENT;
    const ra::Account& a = l->accounts()[index];
    rig_account full{};
    full.size = account->size;
    full.id = a.id;
    full.kind = static_cast<uint32_t>(a.kind);
    full.budget = a.budget;
    full.cache_bytes = a.cache_bytes;
    full.reaches = a.reaches;
    std::memcpy(full.name, a.name.data(), std::min(a.name.size(), sizeof full.name - 1));
    std::memcpy(full.arch, a.arch.data(), std::min(a.arch.size(), sizeof full.arch - 1));
    std::memcpy(account, &full, std::min(account->size, sizeof full));
    return RIG_OK;
  });
}

int rig_link_fresh(rig_link* link, uint64_t* id) {
  return Handles::while_live(link, HandleKind::kLink, RIG_BAD_HANDLE, [&] {
    if (id != nullptr) *id = link_of_locked(link)->fresh();
    return RIG_OK;
  });
}

int rig_link_endpoint(const rig_link* link, rig_text* endpoint, rig_text* address) {
  return Handles::while_live(link, HandleKind::kLink, RIG_BAD_HANDLE, [&] {
    put_text(endpoint, link_of_locked(link)->endpoint());
    put_text(address, link_of_locked(link)->address());
    return RIG_OK;
  });
}

}  // extern "C"
