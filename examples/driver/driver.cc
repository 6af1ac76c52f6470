// The example's driver: what a runtime's driver does with rig-remote, from opening a job to
// handling a failed one. It uses only the installed package: rig/edge.h (the C functions the
// runtime calls on its hot path) and rig/remote/{job,proxy}.h.
#include "driver.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include <rig/edge.h>
#include <rig/edge.hpp>
#include <rig/remote/job.h>
#include <rig/remote/proxy.h>

namespace {

namespace remote = rig::remote;
namespace edge = rig::edge;

// A proxy and its timeline word, as the runtime keeps them. The link's receiving thread writes
// the word until the job's end has joined it: declared before the job's pointer, a Timeline
// outlives the job (its proxy holds the job, and the job's end joins the thread before the word
// goes).
struct Timeline {
  alignas(8) std::uint64_t word = 0;
  std::uint64_t last = 0;  // the last value handed over
  std::unique_ptr<remote::Proxy> proxy;
};

// Makes the proxy of the agent's device `id`: the machine's host (id 0) has the Host
// capability, any other device the Device capability of its id.
void make(remote::Link& link, std::uint32_t id, Timeline& t) {
  const auto* account = link.account(id);
  if (account == nullptr) {
    throw std::runtime_error("the agent has no device " + std::to_string(id) +
                             " (start it with --devices 1 or more)");
  }
  const remote::abi::Capability capability =
      id == 0 ? remote::abi::Capability{remote::abi::Host{}} : remote::abi::Capability{remote::abi::Device{id}};
  t.proxy = remote::device(link, *account, capability).make(&t.word);
}

// Hands one submission over the way the runtime does: room until it fits (sleeping on the
// timeline while the proxy answers RIG_LATER), then submit with the timeline's next value.
std::uint64_t hand_over(Timeline& t, const rig_submission& s) {
  rig_proxy* d = t.proxy->c_handle();
  for (;;) {
    const int room = rig_proxy_room(d, &s);
    if (room == RIG_FITS) break;
    if (room != RIG_LATER) throw std::runtime_error("the proxy can never run this submission");
    t.proxy->sleep(t.proxy->signaled(), 10);
  }
  const char* why = nullptr;
  if (rig_proxy_submit(d, &s, t.last + 1, &why) != RIG_COMMITTED) {
    throw std::runtime_error(std::string("submit failed: ") + why);
  }
  rig_proxy_commit(d);
  return ++t.last;
}

// Waits on the timeline until it reaches `value`. sleep raises edge::Fault if the job fails.
void wait(Timeline& t, std::uint64_t value) {
  for (std::uint64_t seen = t.proxy->signaled(); seen < value; seen = t.proxy->signaled()) {
    t.proxy->sleep(seen, 1000);
  }
}

rig_side host_side(void* p) { return rig_side{p, 0, 0}; }
rig_side region_side(const remote::Region& r) { return rig_side{nullptr, r.id, 0}; }

rig_part copy_part(rig_side src, rig_side dst, std::uint64_t bytes) {
  rig_part p{};
  p.kind = RIG_PART_COPY;
  p.queue = RIG_QUEUE_COPY;
  p.u.copy = rig_copy{src, dst, 1, bytes, bytes, bytes};
  return p;
}

rig_part words_part(const remote::Image& image, std::uint32_t function, const std::vector<std::uint32_t>& words) {
  rig_part p{};
  p.kind = RIG_PART_WORDS;
  p.queue = RIG_QUEUE_COMPUTE;
  p.u.words = rig_words{image.id, function, static_cast<std::uint32_t>(words.size()), words.data()};
  return p;
}

rig_submission submission(const std::vector<rig_part>& parts) {
  return rig_submission{nullptr, 0, static_cast<std::uint32_t>(parts.size()), parts.data()};
}

std::vector<std::byte> read_file(const char* path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(std::string("cannot read ") + path);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(bytes.size());
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

// Loads the program on the host's proxy and looks `function` up.
std::pair<remote::Image, std::uint32_t> load(Timeline& host, const std::vector<std::byte>& binary,
                                             const std::string& function) {
  auto loaded = host.proxy->image(std::span<const std::byte>(binary));
  if (const auto* refused = std::get_if<std::string>(&loaded)) {
    throw std::runtime_error("the agent refused the program: " + *refused);
  }
  const remote::Image image = std::get<edge::Loaded<remote::Region, remote::Image>>(loaded).image;
  const edge::EntryAnswer entry = host.proxy->entry(image, function);
  if (!std::holds_alternative<edge::Entry>(entry)) throw std::runtime_error("no function " + function);
  return {image, std::get<edge::Entry>(entry).function};
}

// Stops a proxy once its work is done.
void finish(Timeline& t) {
  t.proxy->stop(std::nullopt);
  wait(t, t.last);
}

// The first job: copies both ways on device 1, and fill on the host. True if every byte held.
bool drive(const std::string& endpoint, const std::vector<std::byte>& program) {
  Timeline host, dev;
  auto job = remote::Job::create();
  remote::Link& link = job->connect(endpoint);  // the handshake: learns the agent's devices
  std::printf("connected to %s over %s: %zu devices\n", endpoint.c_str(), link.backend(),
              link.accounts().size());
  make(link, 0, host);
  make(link, 1, dev);

  // Device 1: 1 MiB up, and back into another buffer.
  constexpr std::uint64_t kBytes = 1 << 20;
  const auto region = dev.proxy->alloc(edge::Memory::kDevice, kBytes);
  if (!region) throw std::runtime_error("the agent refused 1 MiB on " + dev.proxy->name());
  std::vector<std::uint8_t> up(kBytes), down(kBytes, 0);
  for (std::size_t i = 0; i < up.size(); ++i) up[i] = static_cast<std::uint8_t>(i * 7 + 3);
  const std::vector<rig_part> round_trip = {copy_part(host_side(up.data()), region_side(*region), kBytes),
                                            copy_part(region_side(*region), host_side(down.data()), kBytes)};
  wait(dev, hand_over(dev, submission(round_trip)));
  const bool copies_exact = up == down;
  std::printf("%s: copied 1 MiB up and back: %s\n", dev.proxy->name().c_str(), copies_exact ? "exact" : "DIFFER");
  dev.proxy->free(*region);

  // The host: fill 1024 words with a value by the words program, then copy them back.
  const auto [image, fill] = load(host, program, "fill");
  constexpr std::uint32_t kWords = 1024, kValue = 0x5eed;
  const auto buffer = host.proxy->alloc(edge::Memory::kDevice, kWords * 4);
  if (!buffer) throw std::runtime_error("the agent refused a buffer on the host");
  std::vector<std::uint32_t> filled(kWords, 0);
  const std::vector<std::uint32_t> words = {static_cast<std::uint32_t>(buffer->id), kValue};  // a buffer: its id's low 32 bits
  const std::vector<rig_part> launch = {words_part(image, fill, words),
                                        copy_part(region_side(*buffer), host_side(filled.data()), kWords * 4)};
  wait(host, hand_over(host, submission(launch)));
  bool fill_exact = true;
  for (std::uint32_t w : filled) fill_exact = fill_exact && w == kValue;
  std::printf("%s: fill ran, %u words came back: %s\n", host.proxy->name().c_str(), kWords,
              fill_exact ? "exact" : "DIFFER");
  host.proxy->free(*buffer);
  host.proxy->unload(image);

  finish(host);
  finish(dev);
  job->close();
  return copies_exact && fill_exact;
}

// The second job fails on purpose: poke faults on the agent, and the fault fails the job. The
// runtime learns it from sleep (edge::Fault), and the job's root cause says why; submit answers
// RIG_FAILED from then on. True if it went so.
bool fail(const std::string& endpoint, const std::vector<std::byte>& program) {
  Timeline host;
  auto job = remote::Job::create();
  remote::Link& link = job->connect(endpoint);
  make(link, 0, host);
  const auto [image, poke] = load(host, program, "poke");
  const auto buffer = host.proxy->alloc(edge::Memory::kDevice, 64);
  if (!buffer) throw std::runtime_error("the agent refused a buffer on the host");
  const std::vector<std::uint32_t> words = {static_cast<std::uint32_t>(buffer->id)};
  const std::vector<rig_part> launch = {words_part(image, poke, words)};
  const std::uint64_t value = hand_over(host, submission(launch));
  try {
    wait(host, value);
    std::printf("poke: reported done, but it should have faulted\n");
    return false;
  } catch (const edge::Fault& fault) {
    std::printf("the second job failed, as it should: %s\n", fault.what());
  }
  const char* why = nullptr;
  const rig_submission again = submission(launch);
  const bool refused = rig_proxy_submit(host.proxy->c_handle(), &again, value + 1, &why) == RIG_FAILED;
  std::printf("a submit after the failure: %s (%s)\n", refused ? "RIG_FAILED" : "committed", refused ? why : "");
  const std::string cause = job->fault_text();
  std::printf("the job's root cause: %s\n", cause.c_str());
  host.proxy->stop(std::nullopt);
  job->close();
  return job->failed() && refused && cause.find("'poke'") != std::string::npos;
}

}  // namespace

extern "C" int rig_example_drive(const char* endpoint, const char* program) {
  try {
    const std::vector<std::byte> binary = read_file(program);
    const bool drove = drive(endpoint, binary);
    const bool failed = fail(endpoint, binary);
    std::printf("%s\n", drove && failed ? "example: every check held" : "example: a check FAILED");
    return drove && failed ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "example: %s\n", e.what());
    return 1;
  }
}
