#include "job/session.h"

#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>
#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include "devices/gpu_devices.h"
#include "job/accounts.h"
#include "job/handshake.h"
#include "process/status.h"
#include "rig/engine/iov_cursor.h"
#include "rig/engine/tcp.h"
#include "rig/wire/codec.h"

namespace rig::agent {

Session::JobParts::JobParts(std::unique_ptr<engine::Socket> socket, const AgentConfig& config, engine::Counters& counters)
    : devices(open_devices(config)),
      connection(std::move(socket), counters),
      reader(connection.socket(), counters),
      stripes(config.backend, counters, config.silence_ms),
      staging(config.max_staged_bytes, host_pinning(config), config.host_memory),
      objects(devices, config.max_objects),
      outbox(connection, stripes),
      incoming(reader, stripes, staging, counters, devices, config.silence_ms),
      executor(devices, objects, staging, outbox, config.instruction_budget) {}

namespace {
// The one place the session's failures get their context: a violation is the client's. `end` is
// the job's end record (Session::serve()): ok, the client's Close.
std::string described(const wire::Outcome& end) {
  if (end.ok()) return "the client closed the job";
  return end.err() == -EPROTO ? "protocol violation: " + end.why() : end.why();
}

// Whether the job's end record says its client ended it: its Close, or the connection closed
// between messages.
bool ended_by_client(const wire::Outcome& end) { return end.ok() || end.err() == wire::kStreamEnded; }

// Whether the job's devices complete work while the session waits (GPUs, or simulated devices
// that act as if, --sim-completion woken), so that the wait must end for it.
bool completes_in_background(const AgentConfig& c) {
  return c.device_kind == DeviceKind::kCuda ||
         (c.device_kind == DeviceKind::kSim && c.sim_completion == SimCompletion::kWoken);
}
}  // namespace

void Session::JobParts::end() {
  connection.shutdown();
  stripes.shutdown();
  executor.clear();  // quiesces every device first
  objects.clear();
}

Session::Session(Authenticated job, const AgentConfig& config, std::string peer, Gauges& gauges, Drain& drain,
                 Heartbeat& heartbeat)
    : config_(config), peer_(std::move(peer)), gauges_(gauges), drain_(drain), heartbeat_(heartbeat),
      hello_(std::move(job)) {}

Session::~Session() = default;

void Session::run() {
  const int fd = hello_.release_fd();  // refuse() or the job's socket closes it
  if (!take(gauges_.jobs, config_.max_jobs)) {
    const std::string why =
        "the agent runs its limit of " + std::to_string(config_.max_jobs) + " jobs (rig-agent --max-jobs)";
    spdlog::warn("job from {} refused: {}", peer_, why);
    bump(gauges_.refused_jobs);
    refuse(fd, why);
    return;
  }
  Held job_held(gauges_.jobs);
  // Left at the end of run(), before the job's socket closes fd.
  const Entered entered(drain_, fd);
  if (!entered) {
    spdlog::info("job from {} refused: {}", peer_, kStopping);
    bump(gauges_.refused_stopping);
    refuse(fd, kStopping);
    return;
  }
  wire::Outcome end = make_job(fd);  // a job it could not make is refused, saying why
  status_accepted_ = (accepted_features(hello_.transcript.offered, config_) & wire::kFeatureStatus) != 0;
  if (end.ok()) {
    end = send_welcome(job_->connection, hello_.transcript, hello_.secret, accounts_of(job_->devices), config_,
                       job_->stripes);
  }
  if (end.ok()) {
    spdlog::info("job from {}: connected ({} devices, {} backend)", peer_, job_->devices.size(),
                 job_->connection.socket().backend());
    welcomed_ = std::chrono::steady_clock::now();
    bump(gauges_.jobs_started);
    end = serve();
    if (!ended_by_client(end) && !fault_.ok()) end = fault_;  // a device faulted, found before a read
  }
  end_job(std::move(end));
}

wire::Outcome Session::make_job(int fd) {
  std::unique_ptr<engine::Socket> socket = engine::make_socket(fd, config_.backend);
  socket->set_silence_ms(config_.silence_ms);
  job_ = std::make_unique<JobParts>(std::move(socket), config_, counters_);
  // Before every read of the socket: what asynchronous devices completed, then what is batched.
  // What is batched leaves with the read (one call into the kernel for both, on io_uring).
  job_->reader.set_spin_us(config_.poll_us);
  job_->reader.set_gather(AgentConfig::kGatherBytes, config_.gather_us);
  // This thread reads the job. A gathered wait is a ppoll of tens of microseconds, which the
  // default timer slack (50 us) could stretch to twice its bound.
  if (config_.gather_us > 0) ::prctl(PR_SET_TIMERSLACK, 1000UL);
  job_->reader.set_before_read([this] {
    fault_ = job_->executor.poll();
    if (!fault_.ok()) return -ECANCELED;
    return job_->outbox.post() ? 0 : -EPIPE;
  });
  // GPUs complete work while the session waits for the client. Before each wait the devices
  // with work are asked to signal the job's wake once it completed (a GPU: a host function
  // queued behind its stream's work); the wake, or at the latest the watch's tick every
  // millisecond, ends the wait, and the executor's poll reports what completed without a
  // message from the client. The watch replaces the socket's silence bound, which it keeps here.
  return watch_devices();
}

void Session::end_job(wire::Outcome end) {
  // Its reading was stopped: unless the client's Close was read (the client ended the job
  // before the stop reached it), the agent stops the job (-ECANCELED) once what it received ran.
  if (drain_.draining() && !close_read_) {
    const wire::Outcome ran = run_received();
    end = ran.ok() ? wire::Outcome::failed(-ECANCELED, kStopping) : ran;
  }
  const std::string why = described(end);
  if (ended_by_client(end)) {
    spdlog::info("job from {} ended: {}; {}", peer_, why, summary());
  } else {
    spdlog::warn("job from {} failed: {}; {}", peer_, why, summary());
    bump(gauges_.jobs_failed);
    job_->outbox.failure(why);
  }
  // Everything the job held goes now: pending work, objects, images.
  job_->end();
  // relaxed: counts (gauges.h); this job's bytes join those of the jobs that ended. The
  // connection's bytes hold the stripes' already (bytes_striped_* is the part that went there).
  gauges_.bytes_in.fetch_add(counters_.bytes_received.load(std::memory_order_relaxed), std::memory_order_relaxed);
  gauges_.bytes_out.fetch_add(counters_.bytes_sent.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

// Devices that complete in the background are watched between the client's frames: their
// completions are reported as the idle watch ticks, while polling spins, and on their wake.
wire::Outcome Session::watch_devices() {
  if (completes_in_background(config_)) {
    wire::Result<std::shared_ptr<Wake>> wake = Wake::make();
    RIG_RETURN_IF_FAILED(wake.outcome());
    job_->wake = std::move(*wake);
    job_->reader.set_idle_watch(1, [this](std::int64_t silent_ms) {
      if (config_.silence_ms > 0 && silent_ms >= config_.silence_ms) return -ETIMEDOUT;
      return report_completed();
    });
    // Polling mode (--poll-us): the reader's spin asks the devices too, each try, so a GPU's
    // completion is reported while the reader spins rather than once the spin is over.
    job_->reader.set_spin_poll([this] { return report_completed(); });
    job_->reader.set_wake(job_->wake->fd(), [this] {
      job_->executor.arm_wakes(job_->wake);
      return 0;
    });
  }
  return {};
}

int Session::report_completed() {
  fault_ = job_->executor.poll();
  if (!fault_.ok()) return -ECANCELED;
  return job_->outbox.flush() ? 0 : -EPIPE;
}

wire::Outcome Session::serve() {
  Heartbeat::Watch watch(heartbeat_, job_->connection);
  for (;;) {
    wire::FrameHeader h{};
    const wire::Outcome got = job_->reader.next(h);
    if (got.err() == wire::kStreamEnded) {
      return wire::Outcome::failed(wire::kStreamEnded, "the client closed the connection");
    }
    if (got.err() == -ETIMEDOUT && engine::tcp_gave_up(job_->reader.fd())) {
      return wire::Outcome::failed(-ETIMEDOUT, engine::kTcpGaveUp);
    }
    if (got.err() == -ETIMEDOUT) {
      return wire::Outcome::failed(-ETIMEDOUT,
                                   "the client sent nothing for " + std::to_string(config_.silence_ms) + " ms");
    }
    if (!got.ok()) return got;  // a violation, or the connection lost
    const auto type = static_cast<wire::MsgType>(h.type);
    if (type == wire::MsgType::kBytes) return wire::violation("bytes that follow no handover");
    std::span<const std::byte> body;
    if (const int r = job_->reader.body(h.length, body); r != 0) {
      return wire::Outcome::failed(r, std::string("connection lost: ") + std::strerror(-r));
    }
    // Busy with the message until the next read: the heartbeat speaks for the session
    // meanwhile, for which the connection's turn must be free (the send posted with the read
    // holds it until it ends).
    if (!job_->outbox.end_posted()) {
      return wire::Outcome::failed(-EPIPE, std::string("connection lost: ") + std::strerror(EPIPE));
    }
    watch.busy();
    bool closed = false;
    const wire::Outcome handled = on_message(type, body, closed);
    watch.done();
    if (!handled.ok() || closed) return handled;  // ok and closed: the client's Close
  }
}

wire::Outcome Session::on_message(wire::MsgType type, std::span<const std::byte> body, bool& closed) {
  switch (type) {
    case wire::MsgType::kRequest: return on_request(body);
    case wire::MsgType::kRelease: return on_release(body);
    case wire::MsgType::kHandover:
      RIG_RETURN_IF_FAILED(on_handover(body));
      return job_->executor.run_ready();
    case wire::MsgType::kPing: {  // keepalive: echo it
      wire::Ping p{};
      RIG_RETURN_IF_FAILED(wire::decode(body, p));
      if (job_->outbox.echo(p)) return {};
      return wire::Outcome::failed(-EPIPE, "connection lost sending a ping");
    }
    case wire::MsgType::kStatusQuery:
      if (status_accepted_) return on_status_query(body);
      return wire::violation("unexpected status query message (kFeatureStatus was not accepted)");
    case wire::MsgType::kClose: {
      wire::Close c{};
      RIG_RETURN_IF_FAILED(wire::decode(body, c));
      close_read_ = closed = true;
      return {};
    }
    default:
      return wire::violation(std::string("unexpected ") + wire::type_name(static_cast<std::uint16_t>(type)) +
                             " message");
  }
}

wire::Outcome Session::on_request(std::span<const std::byte> body) {
  wire::RequestView r;
  RIG_RETURN_IF_FAILED(wire::decode(body, r));
  const wire::Request& q = r.fixed;
  const auto kind = static_cast<wire::RequestKind>(q.kind);
  Answer a;
  if (kind == wire::RequestKind::kEntry || kind == wire::RequestKind::kPrepare) {
    a = job_->objects.entry(q, std::string_view(reinterpret_cast<const char*>(r.tail.data()), r.tail.size()));
  } else if (q.device >= job_->devices.size()) {
    a = {wire::AnswerStatus::kRefused, 0, "no device " + std::to_string(q.device) + " on this agent"};
  } else if (kind == wire::RequestKind::kAlloc) {
    RIG_RETURN_IF_FAILED(job_->objects.alloc(q, a));
  } else if (kind == wire::RequestKind::kMapPeer) {
    RIG_RETURN_IF_FAILED(job_->objects.map_peer(q, a));
  } else {
    RIG_RETURN_IF_FAILED(job_->objects.load_image(q, r.tail, a));
  }
  if (job_->outbox.answer(q.id, a)) return {};
  return wire::Outcome::failed(-EPIPE, "connection lost sending an answer");
}

wire::Outcome Session::on_release(std::span<const std::byte> body) {
  wire::Release r{};
  RIG_RETURN_IF_FAILED(wire::decode(body, r));
  return job_->objects.release(r);
}

wire::Outcome Session::on_handover(std::span<const std::byte> body) {
  wire::HandoverView h;
  RIG_RETURN_IF_FAILED(wire::decode(body, h));
  const std::uint32_t dev = h.fixed.device;
  if (dev >= job_->devices.size()) {
    return wire::violation("handover for device " + std::to_string(dev) + ", which this agent did not open");
  }
  RIG_RETURN_IF_FAILED(job_->executor.check_value(dev, h.fixed.value));
  RIG_RETURN_IF_FAILED(job_->executor.check_room(dev));
  PendingHandover ho;
  wire::Outcome received = resolve_handover(h, job_->devices, job_->objects, ho);
  if (received.ok()) {
    received = job_->incoming.receive(
        ho, {job_->executor.runs_at_once(ho.waits), job_->executor.issues_at_once(dev, ho.waits)});
  }
  if (!received.ok()) {
    const bool in_flight = std::any_of(ho.parts.begin(), ho.parts.end(), [](const PendingPart& p) { return p.streams; });
    if (in_flight) {
      job_->executor.abandon(std::move(ho));  // copies issued as the bytes came still read its staging
    } else {
      for (PendingPart& p : ho.parts) job_->staging.give(std::move(p.staged), p.staged_capacity);  // to be unpinned
    }
    return received;
  }
  job_->executor.accept(std::move(ho));
  ++handovers_;
  return {};
}

wire::Outcome Session::on_status_query(std::span<const std::byte> body) {
  wire::StatusQuery q{};
  RIG_RETURN_IF_FAILED(wire::decode(body, q));
  const StagedCopies staged{job_->incoming.bytes_streamed(),
                            job_->incoming.bytes_streamed() + job_->executor.bytes_copied_in(),
                            job_->executor.bytes_streamed_out()};
  const std::string text = status_text(config_, gauges_, counters_, staged, wire::kMaxStatusText);
  wire::Framed<wire::Status> f{};
  RIG_RETURN_IF_FAILED(wire::encode_status(q.id, text, f));
  const iovec iov[2] = {engine::to_iov(&f, sizeof f), engine::to_iov(text.data(), text.size())};
  if (job_->outbox.send_frame(iov)) return {};
  return wire::Outcome::failed(-EPIPE, "connection lost sending the status");
}

wire::Outcome Session::run_received() {
  wire::Outcome ran;
  while (!job_->executor.idle() && std::chrono::steady_clock::now() < drain_.deadline()) {
    ran = job_->executor.poll();
    if (ran.ok()) ran = job_->executor.run_ready();
    if (!ran.ok()) break;
    if (job_->executor.idle()) break;
    if (job_->wake) job_->executor.arm_wakes(job_->wake);  // as before a wait for the client
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  job_->outbox.flush();
  return ran;
}

std::string Session::summary() const {
  const auto since = welcomed_ == std::chrono::steady_clock::time_point{} ? std::chrono::steady_clock::now() : welcomed_;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
  // relaxed: counts, read once the job's connections are shut down. The stripes' bytes are in
  // them already.
  const std::uint64_t in = counters_.bytes_received.load(std::memory_order_relaxed);
  const std::uint64_t out = counters_.bytes_sent.load(std::memory_order_relaxed);
  return fmt::format("{:.3f} s, handovers {}, bytes in {}, bytes out {}", seconds, handovers_, in, out);
}

}  // namespace rig::agent
