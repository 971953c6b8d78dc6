// Soak: `gather serve` as a child process under mixed healthy / hanging / failing traffic at a
// moderate, steady rate, its RSS, threads and open files sampled every 10 s into a CSV; at the end
// it says whether they grew after the warm-up.
//
// Usage: soak --gather PATH [--seconds 1800] [--rps 40] [--warmup 60] [--csv soak.csv]
//             [--log soak-gateway.log] [--only products|hang|fail|nowhere|metrics|healthz|orders]
// Run through bench/soak.sh, which builds it. Exit status 0 when nothing grew, 1 when something
// did, 2 on a setup failure.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "gather/downstream/downstream_client.hpp"
#include "support/child_process.hpp"
#include "support/test_server.hpp"

extern char** environ;

using namespace gather::test;
using nlohmann::json;
using std::chrono::milliseconds;
using steady = std::chrono::steady_clock;

namespace {

struct options {
  std::string gather;
  int seconds = 1800;
  int rps = 40;
  int warmup = 60;
  std::string csv = "soak.csv";
  std::string log = "soak-gateway.log";
  std::string only; ///< diagnosis: send only this kind (products, hang, fail, nowhere, metrics, healthz, orders)
};

options parse_options(int argc, char** argv) {
  options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i], value = argv[i + 1];
    if (key == "--gather") o.gather = value;
    else if (key == "--seconds") o.seconds = std::stoi(value);
    else if (key == "--rps") o.rps = std::stoi(value);
    else if (key == "--warmup") o.warmup = std::stoi(value);
    else if (key == "--csv") o.csv = value;
    else if (key == "--log") o.log = value;
    else if (key == "--only") o.only = value;
    else {
      std::fprintf(stderr, "soak: unknown option %s\n", key.c_str());
      std::exit(2);
    }
  }
  if (o.gather.empty()) {
    std::fprintf(stderr, "usage: soak --gather PATH [--seconds S] [--rps N] [--warmup S] [--csv F] [--log F]\n");
    std::exit(2);
  }
  return o;
}

/// `gather serve` with stdout and stderr (the request log) going to a file, so it never blocks
/// on a full pipe.
class gateway_process {
public:
  gateway_process(const std::string& binary, const std::string& config, const std::string& log) : log_(log) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    std::vector<std::string> args{binary, "serve", "--config", config, "--listen", "127.0.0.1:0"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, binary.c_str(), &actions, nullptr, argv.data(), environ) != 0) {
      std::perror("soak: posix_spawn");
      std::exit(2);
    }
    posix_spawn_file_actions_destroy(&actions);
  }
  ~gateway_process() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
  }
  pid_t pid() const { return pid_; }
  /// The port from "listening on http://H:P", waiting at most 10 s; 0 when it never appeared.
  int port() const {
    const auto until = steady::now() + std::chrono::seconds(10);
    while (steady::now() < until) {
      std::ifstream in(log_);
      std::string line;
      while (std::getline(in, line))
        if (auto at = line.find("listening on http://"); at != std::string::npos)
          return std::stoi(line.substr(line.rfind(':') + 1));
      std::this_thread::sleep_for(milliseconds{50});
    }
    return 0;
  }

private:
  std::string log_;
  pid_t pid_ = -1;
};

struct sample {
  double t = 0;
  long rss_kb = 0;
  int threads = 0;
  int fds = 0;
};

sample sample_of(pid_t pid, double t) {
  sample s;
  s.t = t;
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) s.rss_kb = std::stol(line.substr(6));
    if (line.rfind("Threads:", 0) == 0) s.threads = std::stoi(line.substr(8));
  }
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++s.fds;
  return s;
}

/// Least-squares slope of y over t (per minute).
double slope_per_minute(const std::vector<sample>& s, long sample::*field_long, int sample::*field_int) {
  if (s.size() < 2) return 0;
  double mt = 0, my = 0;
  for (auto& x : s) {
    mt += x.t;
    my += field_long ? static_cast<double>(x.*field_long) : x.*field_int;
  }
  mt /= s.size(), my /= s.size();
  double num = 0, den = 0;
  for (auto& x : s) {
    const double y = field_long ? static_cast<double>(x.*field_long) : x.*field_int;
    num += (x.t - mt) * (y - my);
    den += (x.t - mt) * (x.t - mt);
  }
  return den == 0 ? 0 : num / den * 60.0;
}

} // namespace

int main(int argc, char** argv) {
  const options opt = parse_options(argc, argv);
  ::signal(SIGPIPE, SIG_IGN);

  // Downstreams: healthy, slow, failing, flaky, not-JSON on one server; hanging on a silent one.
  test_server down{128};
  std::atomic<unsigned> flaky{0};
  down.get(R"(/ok/(\w+))", [](const httplib::Request& req, httplib::Response& res) {
    res.set_content(json{{"id", req.matches[1].str()}, {"title", "item"}, {"stock", 3},
                         {"promo", {{"id", "p" + req.matches[1].str()}}}}.dump(), "application/json");
  });
  down.get(R"(/slow/(\w+))", [&](const httplib::Request& req, httplib::Response& res) {
    down.delay(milliseconds{20 + std::hash<std::string>{}(req.matches[1].str()) % 120});
    res.set_content(R"({"amount": 12.5, "currency": "CNY"})", "application/json");
  });
  down.get(R"(/fail/\w+)", [](const httplib::Request&, httplib::Response& res) {
    res.status = 503;
    res.set_content(R"({"error": "down"})", "application/json");
  });
  down.get(R"(/flaky/\w+)", [&](const httplib::Request&, httplib::Response& res) {
    if (++flaky % 3 == 0) {
      res.status = 500;
      return;
    }
    res.set_content(R"({"id": "c1", "label": "10% off"})", "application/json");
  });
  down.get(R"(/text/\w+)", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("<html>not json</html>", "text/html");
  });
  down.start();
  silent_server hung;
  const std::string b = down.base_url(), h = hung.base_url();

  const json sections = json::array({
      {{"name", "base"}, {"url", b + "/ok/{id}"}, {"timeout_ms", 300}, {"required", true}},
      {{"name", "price"}, {"url", b + "/slow/{id}"}, {"timeout_ms", 100}, {"fallback", {{"amount", nullptr}}}},
      {{"name", "stock"}, {"url", b + "/fail/{id}"}, {"timeout_ms", 100}, {"fallback_from", "base.stock"},
       {"retry", {{"attempts", 2}, {"backoff_ms", 20}}}},
      {{"name", "reviews"}, {"url", h + "/reviews/{id}"}, {"timeout_ms", 150}, {"fallback", {{"score", 0}}}},
      {{"name", "promo"}, {"url", b + "/flaky/{id}"}, {"timeout_ms", 200}, {"fallback", {{"id", nullptr}}},
       {"cache_ttl_ms", 2000}},
      {{"name", "coupon"}, {"url", b + "/ok/{promo.id}"}, {"timeout_ms", 200}, {"fallback", json::array()},
       {"fields", {"id"}}},
      {{"name", "text"}, {"url", b + "/text/{id}"}, {"timeout_ms", 200}, {"fallback", ""}},
  });
  const json config = {
      {"listen", "127.0.0.1:0"},
      {"max_inflight", 512},
      {"routes",
       json::array({
           {{"path", "/products/{id}"}, {"deadline_ms", 400}, {"sections", sections}},
           {{"path", "/hang/{id}"}, {"deadline_ms", 500},
            {"sections", {{{"name", "s"}, {"url", h + "/x/{id}"}, {"timeout_ms", 300}, {"required", true}}}}},
           {{"path", "/fail/{id}"}, {"deadline_ms", 500},
            {"sections", {{{"name", "s"}, {"url", b + "/fail/{id}"}, {"timeout_ms", 100}, {"required", true}}}}},
           {{"path", "/orders"},
            {"batch", {{"url", b + "/ok/{item}"}, {"timeout_ms", 200}, {"concurrency", 8}, {"max_items", 50}}}},
       })},
  };
  const std::string config_path = temp_file(config.dump(2));
  gateway_process gw{opt.gather, config_path, opt.log};
  const int port = gw.port();
  if (port == 0) {
    std::fprintf(stderr, "soak: the gateway did not start; see %s\n", opt.log.c_str());
    return 2;
  }
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  std::printf("soak: gateway pid %d on %s, %d s at %d req/s, warm-up %d s, samples in %s\n", gw.pid(),
              base.c_str(), opt.seconds, opt.rps, opt.warmup, opt.csv.c_str());

  // Load: one curl-multi client, a request every 1/rps s, mixed by a fixed-seed generator.
  gather::downstream_client load;
  std::mutex codes_mutex;
  std::map<int, long> codes;
  std::atomic<long> sent{0}, answered{0};
  std::mt19937 rng{42};
  const auto submit_one = [&] {
    static const std::map<std::string, int> only_pick = {{"products", 0},  {"hang", 55},    {"fail", 70},
                                                         {"nowhere", 80},  {"metrics", 85}, {"healthz", 90}};
    int pick = static_cast<int>(rng() % 100);
    if (auto it = only_pick.find(opt.only); it != only_pick.end())
      pick = it->second;
    const std::string id = std::to_string(rng() % 500);
    std::string url = base;
    if (pick < 55) url += "/products/" + id;              // degraded 200s (one hangs, one fails, ...)
    else if (pick < 70) url += "/hang/" + id;             // 504
    else if (pick < 80) url += "/fail/" + id;             // 503
    else if (pick < 85) url += "/nowhere/" + id;          // 404
    else if (pick < 90) url += "/metrics";                // operations endpoints
    else url += "/healthz";
    gather::transfer_request req{url, {"X-Request-Id: soak-" + std::to_string(sent.load())}, milliseconds{5000}};
    ++sent;
    load.submit(std::move(req), [&](gather::transfer_result&& r) {
      std::lock_guard<std::mutex> lock(codes_mutex);
      ++codes[r.error == gather::transfer_error::none ? static_cast<int>(r.http_status) : -1];
      ++answered;
    });
  };

  // Warm-up burst: cpp-httplib gives each connection a thread of its pool (max_inflight + 32), and a
  // thread's stack and heap pages become resident the first time it serves. At a moderate rate new
  // threads keep being drawn for many minutes, which reads as growth; as many concurrent
  // connections as there are handler threads make every one serve once before the clock starts.
  const int handler_threads = config["max_inflight"].get<int>() + 32;
  std::atomic<int> burst_done{0};
  for (int i = 0; i < handler_threads; ++i) {
    gather::transfer_request req{base + "/products/" + std::to_string(i % 500), {}, milliseconds{10000}};
    load.submit(std::move(req), [&](gather::transfer_result&&) { ++burst_done; });
  }
  if (!eventually([&] { return burst_done.load() == handler_threads; }, std::chrono::seconds(30)))
    std::fprintf(stderr, "soak: the warm-up burst did not finish (%d of %d)\n", burst_done.load(), handler_threads);
  std::this_thread::sleep_for(std::chrono::seconds(3)); // the burst's connections go idle and close
  std::printf("warm-up burst: %d concurrent requests, so that every handler thread has served once\n",
              handler_threads);

  std::ofstream csv(opt.csv);
  csv << "t_s,rss_kb,threads,fds,sent,answered,downstream_calls\n";
  std::vector<sample> samples;
  const auto start = steady::now();
  const auto period = std::chrono::microseconds(1000000 / std::max(1, opt.rps));
  auto next_request = start;
  auto next_sample = start;
  long batch_every = std::max(1, opt.rps); // one 20-item batch POST a second, through curl too
  long ticks = 0;
  for (;;) {
    const auto now = steady::now();
    const double t = std::chrono::duration<double>(now - start).count();
    if (now >= next_sample) {
      const sample s = sample_of(gw.pid(), t);
      if (s.rss_kb == 0) {
        std::fprintf(stderr, "soak: the gateway died; see %s\n", opt.log.c_str());
        return 2;
      }
      samples.push_back(s);
      csv << static_cast<long>(t) << ',' << s.rss_kb << ',' << s.threads << ',' << s.fds << ','
          << sent.load() << ',' << answered.load() << ',' << down.calls() << '\n'
          << std::flush;
      std::printf("t=%4lds rss=%6ld kB threads=%3d fds=%4d sent=%ld answered=%ld\n", static_cast<long>(t),
                  s.rss_kb, s.threads, s.fds, sent.load(), answered.load());
      std::fflush(stdout);
      next_sample += std::chrono::seconds(10);
      if (t >= opt.seconds) break;
    }
    if (now >= next_request) {
      const bool batch_tick = opt.only.empty() ? ++ticks % batch_every == 0 : opt.only == "orders";
      if (batch_tick) {
        // Batch POSTs go through httplib (the load client only GETs), on a short-lived thread.
        std::thread([port, &codes, &codes_mutex, &answered, &sent] {
          ++sent;
          httplib::Client c{"127.0.0.1", port};
          c.set_read_timeout(5, 0);
          json items = json::array();
          for (int i = 0; i < 20; ++i) items.push_back(i % 7 == 0 ? std::to_string(i) : "o" + std::to_string(i));
          auto r = c.Post("/orders", json{{"items", items}}.dump(), "application/json");
          std::lock_guard<std::mutex> lock(codes_mutex);
          ++codes[r ? r->status : -1];
          ++answered;
        }).detach();
      } else {
        submit_one();
      }
      next_request += period;
    }
    std::this_thread::sleep_until(std::min(next_request, next_sample));
  }

  // Let the last requests finish before the final verdict.
  for (int i = 0; i < 100 && answered.load() < sent.load(); ++i)
    std::this_thread::sleep_for(milliseconds{100});

  std::printf("\nrequests: sent %ld, answered %ld; by status:", sent.load(), answered.load());
  {
    std::lock_guard<std::mutex> lock(codes_mutex);
    for (auto& [code, n] : codes) std::printf(" %d:%ld", code, n);
  }
  std::printf("  (-1: no answer)\n");

  std::vector<sample> after;
  for (auto& s : samples)
    if (s.t >= opt.warmup) after.push_back(s);
  if (after.size() < 3) {
    std::printf("verdict: too few samples after the %d s warm-up to judge growth\n", opt.warmup);
    return 0;
  }
  const auto& first = after.front();
  const auto& last = after.back();
  const auto [min_rss, max_rss] = std::minmax_element(after.begin(), after.end(),
                                                      [](auto& a, auto& b) { return a.rss_kb < b.rss_kb; });
  const double rss_slope = slope_per_minute(after, &sample::rss_kb, nullptr);
  const double thread_slope = slope_per_minute(after, nullptr, &sample::threads);
  const double fd_slope = slope_per_minute(after, nullptr, &sample::fds);
  std::printf("after warm-up (%zu samples, t=%.0f..%.0f s):\n", after.size(), first.t, last.t);
  std::printf("  rss     %ld -> %ld kB (min %ld, max %ld), slope %+.1f kB/min\n", first.rss_kb, last.rss_kb,
              min_rss->rss_kb, max_rss->rss_kb, rss_slope);
  std::printf("  threads %d -> %d, slope %+.2f /min\n", first.threads, last.threads, thread_slope);
  std::printf("  fds     %d -> %d, slope %+.2f /min\n", first.fds, last.fds, fd_slope);
  // Growth: RSS up more than 1 MiB after the warm-up with a trend above 256 kB/min (15 MB an hour),
  // or any thread or descriptor trend above noise.
  const bool rss_grew = last.rss_kb - first.rss_kb > 1024 && rss_slope > 256;
  const bool threads_grew = last.threads > first.threads + 2 && thread_slope > 0.5;
  const bool fds_grew = last.fds > first.fds + 16 && fd_slope > 1;
  std::printf("verdict: rss %s, threads %s, fds %s\n", rss_grew ? "GREW" : "flat", threads_grew ? "GREW" : "flat",
              fds_grew ? "GREW" : "flat");
  std::remove(config_path.c_str());
  return rss_grew || threads_grew || fds_grew ? 1 : 0;
}
