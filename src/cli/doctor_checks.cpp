#include "doctor_checks.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <thread>

#include "autotrain/comm/gloo_address.hpp"
#include "autotrain/core/error.hpp"
#include "autotrain/core/mpi.hpp"
#include "autotrain/core/paths.hpp"
#include "autotrain/core/strings.hpp"
#include "autotrain/core/timer.hpp"
#include "autotrain/launch/affinity.hpp"
#include "autotrain/launch/launcher_env.hpp"
#include "autotrain/launch/network.hpp"
#include "gather_json.hpp"

namespace autotrain::cli {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr int kTag = 0x4443;  // "DC": the doctor's point-to-point messages

// The hosts in the order of their first rank: node 0 first.
std::vector<std::string> nodes_of(const std::vector<std::string>& hosts) {
  std::vector<std::string> nodes;
  for (const auto& host : hosts) {
    if (std::find(nodes.begin(), nodes.end(), host) == nodes.end()) nodes.push_back(host);
  }
  return nodes;
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string text;
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    text += (text.empty() ? "" : ",") +
            (j == i ? cat(ranks[i]) : cat(ranks[i], j == i + 1 ? "," : "-", ranks[j]));
    i = j + 1;
  }
  return text;
}

std::string rate(double bytes_per_second) {
  if (bytes_per_second >= 1e9) return cat(fixed_point(bytes_per_second / 1e9, 2), " GB/s");
  return cat(fixed_point(bytes_per_second / 1e6, 1), " MB/s");
}

// Seconds the slowest rank of `comm` took for `iterations` runs of `work`, after one warm-up.
template <typename Work>
double timed_on(MPI_Comm comm, int iterations, Work work) {
  work();
  AT_MPI_CHECK(MPI_Barrier(comm));
  const Timer timer;
  for (int i = 0; i < iterations; ++i) work();
  double seconds = timer.seconds();
  AT_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, comm));
  return seconds;
}

// nccl-tests' bus bandwidth of an allreduce of `bytes` over `comm`: algbw · 2(n−1)/n.
double allreduce_busbw(MPI_Comm comm, std::size_t bytes) {
  int size = 1;
  AT_MPI_CHECK(MPI_Comm_size(comm, &size));
  if (size < 2) return 0;
  std::vector<float> buffer(bytes / sizeof(float), 1.0f);
  constexpr int kIterations = 3;
  const double seconds = timed_on(comm, kIterations, [&] {
    AT_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, buffer.data(), static_cast<int>(buffer.size()),
                               MPI_FLOAT, MPI_SUM, comm));
  });
  return double(bytes) * kIterations / seconds * 2.0 * (size - 1) / size;
}

// Node 0's first rank exchanges 4 MiB with each other node's first rank in turn (one link at a
// time, so each figure is that link's alone), and returns each link's fastest round trip in
// seconds (index: the peer's leader rank) on node 0; nothing on the others. A round visits every
// link; rounds go on, 20 ms apart, until each link has had 3 and a second has passed (at most 50),
// so a rank descheduled on a busy node for a while slows a few rounds of every link, not one link's
// figure. Rank 0 ends the others' loop with an empty message.
std::vector<double> fastest_round_trips(MPI_Comm leaders_comm) {
  int leader = 0;
  int leaders = 1;
  AT_MPI_CHECK(MPI_Comm_rank(leaders_comm, &leader));
  AT_MPI_CHECK(MPI_Comm_size(leaders_comm, &leaders));
  std::vector<char> buffer(std::size_t{4} << 20);
  const int count = static_cast<int>(buffer.size());
  if (leader != 0) {
    for (;;) {
      MPI_Status status;
      AT_MPI_CHECK(MPI_Recv(buffer.data(), count, MPI_CHAR, 0, kTag, leaders_comm, &status));
      int received = 0;
      AT_MPI_CHECK(MPI_Get_count(&status, MPI_CHAR, &received));
      if (received == 0) return {};
      AT_MPI_CHECK(MPI_Send(buffer.data(), count, MPI_CHAR, 0, kTag, leaders_comm));
    }
  }
  std::vector<double> fastest(static_cast<std::size_t>(leaders), 0.0);
  constexpr int kMinRounds = 3;
  constexpr int kMaxRounds = 50;
  constexpr double kMinSeconds = 1.0;
  const Timer total;
  for (int round = 0; round < kMaxRounds; ++round) {
    if (round >= kMinRounds && total.seconds() >= kMinSeconds) break;
    for (int peer = 1; peer < leaders; ++peer) {
      const Timer timer;
      AT_MPI_CHECK(MPI_Send(buffer.data(), count, MPI_CHAR, peer, kTag, leaders_comm));
      AT_MPI_CHECK(
          MPI_Recv(buffer.data(), count, MPI_CHAR, peer, kTag, leaders_comm, MPI_STATUS_IGNORE));
      const double seconds = timer.seconds();
      double& best = fastest[static_cast<std::size_t>(peer)];
      if (round == 0 || seconds < best) best = seconds;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (int peer = 1; peer < leaders; ++peer) {
    AT_MPI_CHECK(MPI_Send(buffer.data(), 0, MPI_CHAR, peer, kTag, leaders_comm));
  }
  return fastest;
}

}  // namespace

const char* verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::ok:
      return "ok";
    case Verdict::warn:
      return "warn";
    case Verdict::fail:
      return "FAIL";
    default:
      return "skipped";
  }
}

std::string describe_ranks(const std::vector<std::string>& hosts, const std::vector<int>& ranks) {
  std::vector<std::string> parts;
  for (const auto& node : nodes_of(hosts)) {
    std::vector<int> here;
    for (int rank : ranks) {
      if (hosts[static_cast<std::size_t>(rank)] == node) here.push_back(rank);
    }
    if (!here.empty()) {
      parts.push_back(cat(node, " (rank", here.size() > 1 ? "s " : " ", rank_list(here), ")"));
    }
  }
  return join(parts, ", ");
}

DoctorRow check_build(const DoctorContext& context) {
  const json mine = {
      {"build", build_id()}, {"version", version()}, {"path", executable_path().string()}};
  const auto all = gather_json(mine, context.world);
  DoctorRow row{"build", cat(context.hosts.size(), " rank(s)"), Verdict::ok, ""};
  if (all.empty()) return row;
  std::map<std::string, std::vector<int>> by_build;
  for (std::size_t r = 0; r < all.size(); ++r) {
    by_build[all[r]["build"].get<std::string>()].push_back(static_cast<int>(r));
  }
  const std::string reference = all[0]["build"];
  if (by_build.size() == 1) {
    row.detail = cat("autotrain ", all[0]["version"].get<std::string>(), ", build ", reference,
                     " on every rank");
    return row;
  }
  row.verdict = Verdict::fail;
  std::vector<std::string> others;
  for (const auto& [build, ranks] : by_build) {
    if (build == reference) continue;
    others.push_back(cat(describe_ranks(context.hosts, ranks), " run build ", build, " (",
                         all[static_cast<std::size_t>(ranks[0])]["path"].get<std::string>(), ")"));
  }
  row.detail = cat("rank 0 runs build ", reference, "; ", join(others, "; "),
                   ": install one build that every node sees, or rebuild everywhere from the "
                   "same sources");
  return row;
}

DoctorRow check_launcher(const DoctorContext& context) {
  const Topology& t = context.topology;
  std::vector<int> all(context.hosts.size());
  for (std::size_t r = 0; r < all.size(); ++r) all[r] = static_cast<int>(r);
  return {"launcher", cat(t.world_size, " rank(s) on ", t.num_nodes, " node(s)"), Verdict::ok,
          cat("started by ", t.launcher, "; ", describe_ranks(context.hosts, all), "; MASTER_ADDR ",
              t.master_addr, ":", t.master_port)};
}

DoctorRow check_cpus(const DoctorContext& context) {
  const std::vector<int> cpus = cpu_affinity();
  const int threads = context.setup ? context.setup->threads : 1;
  const auto all = gather_json({{"cpus", cpus}, {"threads", threads}}, context.world);
  DoctorRow row{"cpus", cat(context.topology.num_nodes, " node(s)"), Verdict::ok, ""};
  if (all.empty()) return row;
  std::vector<std::string> parts;
  std::vector<std::string> crowded;
  for (const auto& node : nodes_of(context.hosts)) {
    std::set<int> cores;
    int ranks = 0;
    int node_threads = 0;
    for (std::size_t r = 0; r < all.size(); ++r) {
      if (context.hosts[r] != node) continue;
      for (int cpu : all[r]["cpus"]) cores.insert(cpu);
      ++ranks;
      node_threads += all[r]["threads"].get<int>();
    }
    const std::vector<int> list(cores.begin(), cores.end());
    const std::string text = cat(node, ": ", ranks, " rank(s), ", node_threads, " thread(s) on ",
                                 cores.size(), " core(s) ", format_cpu_list(list));
    parts.push_back(text);
    if (node_threads > static_cast<int>(cores.size())) crowded.push_back(text);
  }
  if (crowded.empty()) {
    row.detail = join(parts, "; ");
  } else {
    row.verdict = Verdict::warn;
    row.detail = cat(join(crowded, "; "),
                     ": more threads than cores (oversubscribed, every step slower): set "
                     "threads, start fewer ranks per node, or give each rank more cores "
                     "(srun --cpus-per-task, mpirun --map-by slot:PE=N)");
  }
  return row;
}

DoctorRow check_gpus(const DoctorContext& context) {
  const Topology& t = context.topology;
  const bool wants_gpu = context.setup && context.setup->device == train::Device::cuda;
  const auto all = gather_json({{"device", t.device}, {"visible", t.visible_gpus}}, context.world);
  DoctorRow row{"gpus", cat(t.world_size, " rank(s)"), Verdict::ok, ""};
  if (all.empty()) return row;
  std::vector<int> without;
  std::map<std::pair<std::string, int>, std::vector<int>> sharing;
  int most_visible = 0;
  for (std::size_t r = 0; r < all.size(); ++r) {
    const int device = all[r]["device"];
    most_visible = std::max(most_visible, all[r]["visible"].get<int>());
    if (device < 0)
      without.push_back(static_cast<int>(r));
    else
      sharing[{context.hosts[r], device}].push_back(static_cast<int>(r));
  }
  std::vector<std::string> shared;
  for (const auto& [where, ranks] : sharing) {
    if (ranks.size() > 1)
      shared.push_back(cat(describe_ranks(context.hosts, ranks), " share cuda:", where.second));
  }
  if (most_visible == 0) {
    row.detail = "no GPU visible: the run trains on the CPUs";
    if (wants_gpu) {
      row.verdict = Verdict::fail;
      row.detail += ", but device cuda was asked for (check nvidia-smi, --gpus-per-node)";
    }
  } else if (!wants_gpu && context.setup) {
    row.detail =
        cat(most_visible, " GPU(s) visible to a rank; this run trains on the CPUs (device ",
            context.setup->params().device, ")");
  } else if (!shared.empty()) {
    row.verdict = Verdict::warn;
    row.detail = cat(join(shared, "; "),
                     ": more ranks than GPUs on a node (start one rank per GPU: --npernode, "
                     "--ntasks-per-node)");
  } else if (wants_gpu && !without.empty()) {
    row.verdict = Verdict::fail;
    row.detail = cat(describe_ranks(context.hosts, without), " bound to no GPU");
  } else {
    row.detail = cat("one GPU per rank (", most_visible, " visible to a rank at most)");
  }
  return row;
}

DoctorRow check_network(const DoctorContext& context) {
  const GlooPeers peers = gloo_peers(context.world);
  json mine;
  try {
    const GlooAddress address = choose_gloo_address(peers, process_environment());
    mine = {{"address", address.address}, {"how", address.how}};
  } catch (const std::exception& error) {
    mine = {{"error", error.what()}};
  }
  const char* nccl = std::getenv("NCCL_SOCKET_IFNAME");
  const auto all = gather_json(mine, context.world);
  DoctorRow row{"network", cat(context.topology.num_nodes, " node(s)"), Verdict::ok, ""};
  if (all.empty()) return row;
  std::vector<std::string> parts;
  std::vector<std::string> errors;
  std::set<std::string> seen;
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (all[r].contains("error"))
      errors.push_back(all[r]["error"].get<std::string>());
    else if (seen.insert(context.hosts[r]).second)
      parts.push_back(cat(context.hosts[r], " ", all[r]["address"].get<std::string>(), " (",
                          all[r]["how"].get<std::string>(), ")"));
  }
  if (!errors.empty()) {
    row.verdict = Verdict::fail;
    row.detail = errors.front();
    return row;
  }
  row.detail = cat("gloo listens on: ", join(parts, "; "),
                   nccl != nullptr ? cat("; NCCL_SOCKET_IFNAME=", nccl) : std::string());
  return row;
}

DoctorRow check_master_port(const DoctorContext& context) {
  const Topology& t = context.topology;
  DoctorRow row{"master port", cat(t.num_nodes, " node(s)"), Verdict::ok, ""};
  std::optional<TcpListener> listener;
  std::string listen_error;
  if (t.rank == 0) {
    listener.emplace(t.master_port);
    listen_error = listener->error();
  }
  int listening = listen_error.empty() ? 1 : 0;
  AT_MPI_CHECK(MPI_Bcast(&listening, 1, MPI_INT, 0, context.world));
  // One connection per node (its first rank) is enough; rank 0's node connects to itself.
  std::string error;
  if (listening && is_leader(context)) {
    error = tcp_connect_error(t.master_addr, t.master_port, 3000);
  }
  const auto all = gather_json({{"error", error}}, context.world);
  AT_MPI_CHECK(MPI_Barrier(context.world));  // the listener stays until every node tried
  if (t.rank != 0) return row;
  if (!listening) {
    row.verdict = Verdict::fail;
    row.detail = cat("rank 0 cannot listen on port ", t.master_port, " of ", t.hostname, ": ",
                     listen_error, " (another job on the node? set master_port to a free port)");
    return row;
  }
  std::vector<std::string> unreachable;
  for (std::size_t r = 0; r < all.size(); ++r) {
    const std::string failed = all[r]["error"];
    if (!failed.empty()) unreachable.push_back(cat(context.hosts[r], ": ", failed));
  }
  if (unreachable.empty()) {
    row.detail = cat("every node connects to ", t.master_addr, ":", t.master_port);
  } else {
    row.verdict = Verdict::fail;
    row.detail = cat("cannot connect to ", t.master_addr, ":", t.master_port, " from ",
                     join(unreachable, "; "),
                     " (a firewall between the nodes, or MASTER_ADDR on a network they do not "
                     "share: set GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME)");
  }
  return row;
}

DoctorRow check_allreduce(const DoctorContext& context) {
  constexpr std::size_t kBytes = std::size_t{4} << 20;
  const double within = allreduce_busbw(context.node, kBytes);
  const double between = is_leader(context) ? allreduce_busbw(context.leaders, kBytes) : 0;
  const auto all = gather_json({{"within", within}, {"between", between}}, context.world);
  DoctorRow row{"allreduce", cat(context.topology.world_size, " rank(s)"), Verdict::ok, ""};
  if (all.empty()) return row;
  std::vector<std::string> parts;
  std::set<std::string> seen;
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (!seen.insert(context.hosts[r]).second || all[r]["within"].get<double>() <= 0) continue;
    parts.push_back(cat(context.hosts[r], " ", rate(all[r]["within"])));
  }
  row.detail = cat("4 MiB fp32 over MPI, bus bandwidth (nccl-tests' busbw): within a node ",
                   parts.empty() ? std::string("n/a (one rank per node)") : join(parts, ", "),
                   "; between nodes ",
                   context.topology.num_nodes > 1 ? rate(all[0]["between"]) : std::string("n/a"));
  return row;
}

std::vector<DoctorRow> check_links(const DoctorContext& context) {
  constexpr double kBytes = double(std::size_t{4} << 20);
  std::vector<double> rates;
  if (is_leader(context)) {
    const std::vector<double> fastest = fastest_round_trips(context.leaders);
    for (std::size_t peer = 1; peer < fastest.size(); ++peer) {
      rates.push_back(2.0 * kBytes / fastest[peer]);
    }
  }
  AT_MPI_CHECK(MPI_Barrier(context.world));
  std::vector<DoctorRow> rows;
  if (context.topology.rank != 0 || context.topology.num_nodes < 2) return rows;
  const std::vector<std::string> nodes = nodes_of(context.hosts);
  std::vector<double> sorted = rates;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  DoctorRow row{"links", cat(nodes.size(), " node(s)"), Verdict::ok, ""};
  std::vector<std::string> parts;
  std::vector<std::string> slow;
  for (std::size_t k = 0; k < rates.size(); ++k) {
    const std::string text = cat(nodes[0], " <-> ", nodes[k + 1], " ", rate(rates[k]));
    parts.push_back(text);
    // A link at under a fifth of the others' (the median; with two links, the faster) holds
    // every step; smaller differences are the noise of a busy machine.
    if (rates.size() >= 2 && rates[k] < 0.2 * median) slow.push_back(text);
  }
  if (slow.empty()) {
    row.detail = cat("4 MiB ping-pong: ", join(parts, ", "));
  } else {
    row.verdict = Verdict::warn;
    row.detail = cat(join(slow, ", "), " is under a fifth of the other links (", rate(median),
                     "): every collective waits for it (check that node's interface speed, "
                     "cabling and route)");
  }
  rows.push_back(row);
  return rows;
}

bool is_leader(const DoctorContext& context) {
  return context.leaders != MPI_COMM_NULL;
}

std::optional<DoctorRow> skipped_without_config(const DoctorContext& context,
                                                const std::string& check) {
  if (context.setup) return std::nullopt;
  return DoctorRow{check, cat(context.topology.num_nodes, " node(s)"), Verdict::skipped,
                   "the configuration did not load"};
}

DoctorRow check_project_folder(const DoctorContext& context) {
  DoctorRow row{"project folder", cat(context.topology.num_nodes, " node(s)"), Verdict::ok, ""};
  if (auto skipped = skipped_without_config(context, row.check)) return *skipped;
  const fs::path project = fs::absolute(context.setup->params().project_name);
  // Every node's first rank writes a file with a token, then reads every other node's.
  json mine = json::object();
  std::string name;
  std::string token;
  if (is_leader(context)) {
    std::random_device random;
    token = cat(context.topology.hostname, "-", getpid(), "-", random());
    name = cat(".doctor-", context.topology.hostname, "-", getpid());
    std::error_code error;
    fs::create_directories(project, error);
    std::ofstream out(project / name);
    out << token;
    out.close();
    if (error || !out) mine["error"] = cat("cannot write ", (project / name).string());
  }
  const auto leaders = gather_json({{"name", name}, {"token", token}}, context.world);
  // Every rank gets the list of files (rank 0 sends it), then the leaders look for them.
  std::string list = context.topology.rank == 0 ? json(leaders).dump() : std::string();
  int length = static_cast<int>(list.size());
  AT_MPI_CHECK(MPI_Bcast(&length, 1, MPI_INT, 0, context.world));
  list.resize(static_cast<std::size_t>(length));
  AT_MPI_CHECK(MPI_Bcast(list.data(), length, MPI_CHAR, 0, context.world));
  double write_rate = 0;
  if (is_leader(context) && !mine.contains("error")) {
    std::vector<std::string> sees;  // the probe files this node finds, its own included
    for (const auto& file : json::parse(list)) {
      const std::string other = file["name"];
      if (other.empty()) continue;
      std::ifstream in(project / other);
      std::string seen;
      std::getline(in, seen);
      if (seen == file["token"].get<std::string>()) sees.push_back(other);
    }
    mine["sees"] = sees;
    // Write bandwidth: 32 MiB, flushed to the file system (fdatasync).
    const fs::path probe = project / (name + ".bandwidth");
    const std::vector<char> block(std::size_t{1} << 20, 'a');
    const Timer timer;
    if (FILE* file = std::fopen(probe.c_str(), "wb")) {
      for (int i = 0; i < 32; ++i) std::fwrite(block.data(), 1, block.size(), file);
      std::fflush(file);
      fdatasync(fileno(file));
      std::fclose(file);
      write_rate = 32.0 * double(block.size()) / timer.seconds();
    }
    std::error_code ignored;
    fs::remove(probe, ignored);
  }
  mine["rate"] = write_rate;
  const auto all = gather_json(mine, context.world);
  AT_MPI_CHECK(MPI_Barrier(context.world));  // every node has looked before the files go
  if (is_leader(context) && !name.empty()) {
    std::error_code ignored;
    fs::remove(project / name, ignored);
  }
  if (all.empty()) return row;
  // The folder rank 0's node sees is the shared one; a node that sees other files is not on it.
  const json shared = all[0].value("sees", json::array());
  std::vector<std::string> failed;
  std::vector<std::string> blind;
  std::vector<std::string> rates;
  std::set<std::string> seen;
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (!seen.insert(context.hosts[r]).second) continue;
    if (all[r].contains("error"))
      failed.push_back(cat(context.hosts[r], ": ", all[r]["error"].get<std::string>()));
    if (!all[r].contains("error") && all[r].value("sees", json::array()) != shared)
      blind.push_back(context.hosts[r]);
    if (all[r]["rate"].get<double>() > 0)
      rates.push_back(cat(context.hosts[r], " ", rate(all[r]["rate"])));
  }
  if (!failed.empty()) {
    row.verdict = Verdict::fail;
    row.detail = cat(join(failed, "; "), " (check the path and its permissions on that node)");
  } else if (!blind.empty()) {
    row.verdict = Verdict::fail;
    row.detail = cat(join(blind, ", "), blind.size() == 1 ? " does" : " do", " not see the files ",
                     context.hosts[0], " wrote in ", project.string(),
                     ": it is not the same folder on every node (node-local storage such as "
                     "/tmp, or a private mount); put project_name on the shared file system");
  } else {
    row.detail = cat(project.string(), " is shared by every node; writes ", join(rates, ", "));
  }
  return row;
}

DoctorRow check_clocks(const DoctorContext& context) {
  // Each node's first rank against rank 0 (Cristian's algorithm): t0 sent, rank 0's clock T,
  // t1 received; offset = T − (t0 + t1)/2 from the round trip that took least.
  const auto now = [] {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  double offset = 0;
  if (is_leader(context)) {
    int leader = 0;
    int leaders = 1;
    AT_MPI_CHECK(MPI_Comm_rank(context.leaders, &leader));
    AT_MPI_CHECK(MPI_Comm_size(context.leaders, &leaders));
    constexpr int kRounds = 8;
    for (int peer = 1; peer < leaders; ++peer) {
      if (leader != 0 && leader != peer) continue;
      double best_trip = 1e30;
      for (int i = 0; i < kRounds; ++i) {
        double stamp = 0;
        if (leader == 0) {
          AT_MPI_CHECK(
              MPI_Recv(&stamp, 1, MPI_DOUBLE, peer, kTag, context.leaders, MPI_STATUS_IGNORE));
          stamp = now();
          AT_MPI_CHECK(MPI_Send(&stamp, 1, MPI_DOUBLE, peer, kTag, context.leaders));
        } else {
          const double t0 = now();
          AT_MPI_CHECK(MPI_Send(&t0, 1, MPI_DOUBLE, 0, kTag, context.leaders));
          AT_MPI_CHECK(
              MPI_Recv(&stamp, 1, MPI_DOUBLE, 0, kTag, context.leaders, MPI_STATUS_IGNORE));
          const double t1 = now();
          if (t1 - t0 < best_trip) {
            best_trip = t1 - t0;
            offset = (t0 + t1) / 2 - stamp;  // > 0: this node's clock is ahead of rank 0's
          }
        }
      }
    }
  }
  const auto all = gather_json({{"offset", offset}}, context.world);
  DoctorRow row{"clocks", cat(context.topology.num_nodes, " node(s)"), Verdict::ok, ""};
  if (all.empty()) return row;
  if (context.topology.num_nodes < 2) {
    row.detail = "one node";
    return row;
  }
  std::vector<std::string> parts;
  std::vector<std::string> skewed;
  std::set<std::string> seen{context.hosts[0]};
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (!seen.insert(context.hosts[r]).second) continue;
    const double seconds = all[r]["offset"];
    const std::string text =
        cat(context.hosts[r], " ", seconds >= 0 ? "+" : "", fixed_point(seconds, 4), " s");
    parts.push_back(text);
    if (std::abs(seconds) > context.clock_warn_seconds) skewed.push_back(text);
  }
  if (skewed.empty()) {
    row.detail = cat("offsets from ", context.hosts[0], ": ", join(parts, ", "));
  } else {
    row.verdict = Verdict::warn;
    row.detail =
        cat(join(skewed, ", "), " from ", context.hosts[0], " (over ", context.clock_warn_seconds,
            " s: log and checkpoint times disagree between nodes; enable NTP/chrony)");
  }
  return row;
}

}  // namespace autotrain::cli
