// rig-bench: the end-to-end bench. Drives an agent's devices through proxies the way the runtime
// would and measures copy bandwidth (host <-> device over a size sweep, strided rows, device ->
// device on the agent) and tiny handovers (round trip, pipelined rate from one thread and from
// several). It starts its own rig-agent on loopback unless given --agent HOST:PORT (another
// machine's). Progress goes to stderr, the table to stdout, every figure and the link counters
// to --json, a bandwidth plot to --plot. Every figure of copies and tiny handovers also says what
// it cost per operation on both ends (costs.h): a second table, and "costs" in the JSON. Every
// byte that comes back is checked: wrong bytes fail the run (exit 2).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "agent_process.h"
#include "beside.h"
#include "rig/engine/secret.h"
#include "close_on_error.h"
#include "copy_bench.h"
#include "costs.h"
#include "fixture.h"
#include "handover_bench.h"
#include "pattern.h"
#include "plot.h"
#include "progress.h"
#include "report.h"
#include "rig/remote/job.h"
#include "rig/wire/messages.h"
#include "rig/wire/version.h"
#include "settings.h"

namespace {

using namespace rig::bench;

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// The "version" and "settings" of an agent's status text ("" for what it has not).
void read_agent_status(const std::string& status, RunInfo& info) {
  const nlohmann::json j = nlohmann::json::parse(status, nullptr, false);
  if (!j.is_object()) return;
  if (j.contains("version") && j["version"].is_string()) info.agent_version = j["version"].get<std::string>();
  if (j.contains("settings") && j["settings"].is_object()) info.agent_settings = j["settings"].dump();
}

rig::remote::Backend parse_backend(const std::string& b) {
  if (b == "uring") return rig::remote::Backend::kUring;
  if (b == "plain") return rig::remote::Backend::kPlain;
  return rig::remote::Backend::kDefault;
}

// The command line.
struct Options {
  Settings s;
  // Empty: found beside this executable after parsing (the help names no path).
  std::string agent, agent_path, backend = "auto", secret_file, device_kind = "sim";
  std::string json, plot, references, python = "/usr/bin/python3", plot_script;
  bool quick = false, handover_bytes = false, handovers_only = false;
  std::vector<std::string> figures;  // --figures: the groups asked (empty: all)
  int stripes = rig::remote::LinkOptions::kAuto;
  std::uint64_t stripe_min_bytes = rig::remote::LinkOptions{}.stripe_min_bytes;
  std::int64_t send_zc_bytes = -1;
};

void add_link_options(CLI::App& app, Options& o) {
  app.add_option("--agent", o.agent, "HOST:PORT of a running rig-agent (default: start one on loopback)");
  app.add_option("--secret-file", o.secret_file,
                 "the secret shared with --agent's rig-agent (default: RIG_SECRET_FILE, else RIG_SECRET; "
                 "an agent the bench starts gets a fresh one)");
  app.add_option("--agent-path", o.agent_path, "the rig-agent to start (default: the one beside rig-bench)");
  app.add_option("--backend", o.backend, "socket backend of the link (and of the agent started): auto, uring, plain")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "uring", "plain"}));
  app.add_option("--device-kind", o.device_kind,
                 "the devices of the agent rig-bench starts: sim (simulated), cuda (the machine's GPUs) or "
                 "auto (rig-agent --device-kind)")
      ->capture_default_str()
      ->check(CLI::IsMember({"sim", "cuda", "auto"}));
  app.add_option("--stripes", o.stripes,
                 "data connections to stripe large copies over (default: none on loopback, 4 elsewhere; "
                 "the agent grants at most its --max-stripes)");
  app.add_option("--stripe-min-bytes", o.stripe_min_bytes, "copies of at least this size go striped")
      ->capture_default_str();
  app.add_option("--send-zc-bytes", o.send_zc_bytes,
                 "zero-copy threshold of the link's sends (and of the agent started): sends of at "
                 "least this many bytes use SEND_ZC; 0: never; -1: the default (off on loopback, "
                 "1 MiB otherwise, RIG_SEND_ZC_BYTES overrides); see docs/TUNING.md")
      ->capture_default_str()
      ->check(CLI::Range(std::int64_t{-1}, std::int64_t{1} << 40));
}

void add_measure_options(CLI::App& app, Options& o) {
  Settings& s = o.s;
  CLI::Option* handovers_only = app.add_flag(
      "--handovers-only", o.handovers_only,
      "only the tiny-handover figures (for profiling them: perf record -e cpu-clock -g); the same as --figures handovers");
  app.add_option("--figures", o.figures,
                 "only these groups of figures, comma-separated: h2d, d2h (the copies of the sweep or of --sizes), "
                 "strided, d2d, handovers (default: all)")
      ->delimiter(',')
      ->check(CLI::IsMember({"h2d", "d2h", "strided", "d2d", "handovers"}))
      ->excludes(handovers_only);
  app.add_flag("--quick", o.quick,
               "small run: --min-time 0.2 --max-size 64MiB --batch-bytes 16MiB --rtt-count 2000 --pipeline 1024");
  app.add_option("--min-time", s.min_time, "seconds timed per figure, at least")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 3600.0));
  CLI::Option* max_size = app.add_option("--max-size", s.max_size, "largest copy of the sweep (4KiB * 4^k up to it)")
      ->capture_default_str()
      ->transform(CLI::AsSizeValue(false))
      ->check(CLI::Range(std::uint64_t{4096}, std::uint64_t{1} << 32));
  app.add_option("--sizes", s.copy_sizes,
                 "the host <-> device copies of these sizes only, comma-separated (e.g. 1MiB,64MiB), in place of "
                 "the sweep (for measuring or profiling one size)")
      ->delimiter(',')
      ->transform(CLI::AsSizeValue(false))
      ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 32))
      ->excludes(max_size);
  app.add_option("--batch-bytes", s.batch_bytes, "bytes of copies pipelined per timed batch")
      ->capture_default_str()
      ->transform(CLI::AsSizeValue(false))
      ->check(CLI::Range(std::uint64_t{4096}, std::uint64_t{1} << 32));
  app.add_option("--rtt-count", s.rtt_count, "tiny handover round trips timed (p50, p99)")
      ->capture_default_str()
      ->check(CLI::Range(1u, 10'000'000u));
  app.add_option("--pipeline", s.pipeline, "tiny handovers submitted per timed batch")
      ->capture_default_str()
      ->check(CLI::Range(1u, 1'000'000u));
  app.add_option("--d2d-bytes", s.d2d_bytes, "bytes of the device -> device copy on the agent")
      ->capture_default_str()
      ->transform(CLI::AsSizeValue(false))
      ->check(CLI::Range(std::uint64_t{4096}, std::uint64_t{1} << 34));
  app.add_option("--threads", s.threads, "threads (a proxy each) of the combined handover rate")
      ->capture_default_str()
      ->check(CLI::Range(1u, 63u));
}

void add_output_options(CLI::App& app, Options& o) {
  app.add_option("--json", o.json, "write every figure and the link counters to this JSON file");
  app.add_option("--plot", o.plot, "draw bandwidth against size into this PNG (runs bench/plot.py)");
  app.add_option("--references", o.references,
                 "JSON of reference figures to draw as lines (scripts/bench writes it)");
  app.add_option("--python", o.python, "python3 that has matplotlib")->capture_default_str();
  app.add_option("--plot-script", o.plot_script,
                 "the plot script (default: share/rig_remote/plot.py beside rig-bench)");
  app.add_flag("--handover-bytes", o.handover_bytes,
               "print the bytes of a tiny handover's message on the wire and exit");
}

// After parsing: the paths found beside this executable, and --quick's sizes where not given.
void complete(const CLI::App& app, Options& o) {
  // Installed, rig-agent and plot.py lie in bin/ and share/rig_remote/; in the build tree, in
  // agent/ and share/rig_remote/ (bench/CMakeLists.txt copies plot.py there).
  if (o.agent_path.empty()) o.agent_path = beside_self({"rig-agent", "../agent/rig-agent"});
  if (o.plot_script.empty()) o.plot_script = beside_self({"../share/rig_remote/plot.py"});
  if (o.quick) {
    Settings& s = o.s;
    if (app.count("--min-time") == 0) s.min_time = 0.2;
    if (app.count("--max-size") == 0) s.max_size = 64 * kMiB;
    if (app.count("--batch-bytes") == 0) s.batch_bytes = 16 * kMiB;
    if (app.count("--rtt-count") == 0) s.rtt_count = 2000;
    if (app.count("--pipeline") == 0) s.pipeline = 1024;
  }
  Settings& s = o.s;
  if (!s.copy_sizes.empty()) s.max_size = *std::max_element(s.copy_sizes.begin(), s.copy_sizes.end());
  if (o.handovers_only) o.figures = {"handovers"};
  if (!o.figures.empty()) {
    const auto asked = [&](const char* group) { return std::find(o.figures.begin(), o.figures.end(), group) != o.figures.end(); };
    s.h2d = asked("h2d");
    s.d2h = asked("d2h");
    s.strided = asked("strided");
    s.d2d = asked("d2d");
    s.handovers = asked("handovers");
  }
}

RunInfo run_info(const Options& o) {
  RunInfo info;
  info.started = utc_now();
  info.quick = o.quick;
  info.min_time = o.s.min_time;
  info.max_size = o.s.max_size;
  info.figures = o.figures;
  info.threads = o.s.threads;
  info.handover_message_bytes = kTinyHandoverMessageBytes;
  info.send_zc_bytes = o.send_zc_bytes;
  return info;
}

// Without --agent: starts the bench's own agent on loopback (into `own`), with a fresh secret of
// its own (kept in `secret`), and points `o` at both.
void start_own_agent(Options& o, std::optional<rig::engine::PrivateSecretFile>& secret,
                     std::optional<AgentProcess>& own) {
  if (!o.agent.empty()) return;
  rig::wire::Result<rig::engine::PrivateSecretFile> made = rig::engine::PrivateSecretFile::make();
  if (!made.ok()) throw std::runtime_error(made.outcome().why());  // main says why, as before
  secret.emplace(std::move(*made));
  o.secret_file = secret->path();
  const Settings& s = o.s;
  const std::uint64_t budget = std::max<std::uint64_t>(1ull << 30, 2 * s.region_bytes() + 64 * kMiB);
  own.emplace(o.agent_path,
              std::vector<std::string>{"--devices", std::to_string(std::max(4u, s.threads)), "--device-budget",
                                       std::to_string(budget), "--backend", o.backend, "--send-zc-bytes",
                                       std::to_string(o.send_zc_bytes), "--secret-file", o.secret_file,
                                       "--device-kind", o.device_kind});
  o.agent = own->endpoint();
  progress("started %s on %s (pid %d)", o.agent_path.c_str(), o.agent.c_str(), static_cast<int>(own->pid()));
}

rig::remote::Link& connect(rig::remote::Job& job, const Options& o, RunInfo& info) {
  rig::remote::LinkOptions options;
  options.backend = parse_backend(o.backend);
  options.stripes = o.stripes;
  options.stripe_min_bytes = o.stripe_min_bytes;
  options.secret_file = o.secret_file;
  if (o.send_zc_bytes >= 0) options.send_zc_bytes = static_cast<std::size_t>(o.send_zc_bytes);
  rig::remote::Link& link = job.connect(o.agent, options);
  info.agent = o.agent;
  info.backend = link.backend();
  info.stripes = static_cast<std::uint32_t>(link.stripes());
  info.stripe_min_bytes = link.stripes() > 0 ? o.stripe_min_bytes : 0;
  progress("connected to %s over %s; %zu devices besides the host; %zu stripes", o.agent.c_str(), link.backend(),
           link.accounts().size() - 1, link.stripes());
  if (link.accounts().size() < 2) throw std::runtime_error("the agent opened no device besides its host");
  for (std::size_t i = 1; i < link.accounts().size(); ++i) {
    const rig::remote::Account& a = link.accounts()[i];
    info.devices.push_back(a.name + " (" + a.arch + ")");
  }
  progress("the agent's devices: %s", [&] {
    std::string all;
    for (const std::string& d : info.devices) all += (all.empty() ? "" : ", ") + d;
    return all;
  }().c_str());
  if (link.agent_status_supported()) {
    read_agent_status(link.agent_status(), info);
    if (!info.agent_settings.empty()) progress("the agent's settings: %s", info.agent_settings.c_str());
  }
  return link;
}

void print_totals(const Report& report, const CounterSnapshot& totals) {
  report.print_table(stdout);
  report.print_costs(stdout);
  std::printf("link: %llu messages sent in %llu send calls; payload copied in user space %llu B, received in place %llu B, staged %llu B; zero-copy sends %llu (kernel copied %llu)\n",
              static_cast<unsigned long long>(totals.messages_sent),
              static_cast<unsigned long long>(totals.send_calls),
              static_cast<unsigned long long>(totals.payload_bytes_copied),
              static_cast<unsigned long long>(totals.payload_bytes_direct),
              static_cast<unsigned long long>(totals.bytes_staged),
              static_cast<unsigned long long>(totals.zc_sends),
              static_cast<unsigned long long>(totals.zc_copied));
  std::fflush(stdout);
}

// The JSON (--json, or a temporary one for the plot) and the plot: 0, or 3 if the plot failed.
int write_outputs(const Options& o, const Report& report, const RunInfo& info, const CounterSnapshot& totals) {
  std::string results = o.json;
  std::string temporary;
  if (results.empty() && !o.plot.empty()) {
    char name[] = "/tmp/rig-bench-XXXXXX.json";
    const int fd = ::mkstemps(name, 5);
    if (fd < 0) throw std::runtime_error("cannot create a temporary JSON file");
    ::close(fd);
    results = temporary = name;
  }
  if (!results.empty()) {
    report.write_json(results, info, totals);
    if (!o.json.empty()) progress("wrote %s", o.json.c_str());
  }
  if (o.plot.empty()) return 0;
  const int rc = run_plot(PlotCommand{o.python, o.plot_script, results, o.references, o.plot});
  if (!temporary.empty()) ::unlink(temporary.c_str());
  if (rc != 0) {
    std::fprintf(stderr, "rig-bench: the plot failed (%s %s exited with %d)\n", o.python.c_str(),
                 o.plot_script.c_str(), rc);
    return 3;
  }
  progress("wrote %s", o.plot.c_str());
  return 0;
}

// Connects, measures, prints and writes: main's exit status.
int run(Options& o) {
  RunInfo info = run_info(o);
  Report report;
  std::optional<rig::engine::PrivateSecretFile> own_secret;  // the bench's own agent and link prove it
  std::optional<AgentProcess> own;
  start_own_agent(o, own_secret, own);
  info.own_agent = own.has_value();
  if (own) info.device_kind = o.device_kind;
  auto job = rig::remote::Job::create();
  rig::remote::Link& link = connect(*job, o, info);
  const std::unique_ptr<AgentWatch> watch = make_agent_watch(link, own ? own->pid() : 0);
  progress("the agent's side of the costs: %s%s", watch->source().c_str(),
           watch->syscalls_measured() ? "" : " (its system calls not measured)");
  {
    Fixture fx(link, 1, o.s.region_bytes());
    fx.set_agent_watch(*watch);
    CloseOnError close_on_error(*job);
    bench_copies(fx, o.s, report);
    bench_handovers(fx, o.s, report);
  }
  const CounterSnapshot totals = CounterSnapshot::of(link.counters());
  job->close();
  print_totals(report, totals);
  return write_outputs(o, report, info, totals);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rig-bench: copy bandwidth and tiny-handover figures of rig-remote, end to end"};
  app.set_version_flag("--version", std::string("rig-bench ") + rig::wire::software_version() + " (protocol " +
                                        std::to_string(rig::wire::kVersion) + ")");
  Options o;
  add_link_options(app, o);
  add_measure_options(app, o);
  add_output_options(app, o);
  CLI11_PARSE(app, argc, argv);
  complete(app, o);
  if (o.handover_bytes) {
    std::printf("%u\n", kTinyHandoverMessageBytes);
    return 0;
  }
  try {
    return run(o);
  } catch (const BytesDiffer& e) {
    std::fprintf(stderr, "rig-bench: FAILED: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rig-bench: %s\n", e.what());
    return 1;
  }
}
