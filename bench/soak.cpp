// Soak: `gather serve` as a child process under a steady mixed load for an hour (bench/soak.sh):
// aggregates with healthy, slow, hedged, hanging, failing, flaky and refused sections, cache hits,
// batch POSTs, requests abandoned mid-flight, connection churn, and a configuration reload every
// minute. Every 10 s it samples the gateway's RSS, threads and descriptors (/proc) and its actors,
// connections and downstream calls (/debug/actors) into a CSV; at the end it says whether any of
// them grew after the warm-up. bench/soak_plot.sh draws the CSV.
//
// Usage: soak --gather PATH [--seconds 3600] [--rps 100] [--warmup 300] [--csv soak.csv]
//             [--log soak-gateway.log] [--reload-every 60]
// Exit status 0 when nothing grew, 1 when something did, 2 on a setup failure.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
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

#include "gather/downstream/call/downstream_client.hpp"
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
  int seconds = 3600;
  int rps = 100;
  int warmup = 300;
  int reload_every = 60;
  std::string csv = "soak.csv";
  std::string log = "soak-gateway.log";
};

options parse_options(int argc, char** argv) {
  options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i], value = argv[i + 1];
    if (key == "--gather") o.gather = value;
    else if (key == "--seconds") o.seconds = std::stoi(value);
    else if (key == "--rps") o.rps = std::stoi(value);
    else if (key == "--warmup") o.warmup = std::stoi(value);
    else if (key == "--reload-every") o.reload_every = std::stoi(value);
    else if (key == "--csv") o.csv = value;
    else if (key == "--log") o.log = value;
    else {
      std::fprintf(stderr, "soak: unknown option %s\n", key.c_str());
      std::exit(2);
    }
  }
  if (o.gather.empty()) {
    std::fprintf(stderr, "usage: soak --gather PATH [--seconds S] [--rps N] [--warmup S] [--reload-every S] "
                         "[--csv F] [--log F]\n");
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

/// One row of the CSV: the process from /proc, the gateway's own counts from /debug/actors
/// (-1 when it did not answer within 2 s).
struct sample {
  double t = 0;
  double rss_kb = 0;
  double threads = 0;
  double fds = 0;
  double actors = -1;
  double connections = -1;
  double coordinators = -1;
  double workers = -1;
  double downstream_inflight = -1;
};

void sample_process(pid_t pid, sample& s) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) s.rss_kb = std::stod(line.substr(6));
    if (line.rfind("Threads:", 0) == 0) s.threads = std::stod(line.substr(8));
  }
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++s.fds;
}

/// A GET through `client`, waited for (the sampler's thread, never a loop's): the body, or empty.
std::string fetch_body(gather::downstream_client& client, const std::string& url) {
  auto answer = std::make_shared<std::promise<std::string>>();
  auto got = answer->get_future();
  client.submit({url, {}, milliseconds{2000}}, [answer](gather::transfer_result&& r) {
    answer->set_value(r.error == gather::transfer_error::none && r.http_status == 200 ? std::move(r.body) : "");
  });
  return got.wait_for(std::chrono::seconds(3)) == std::future_status::ready ? got.get() : "";
}

void sample_gateway(gather::downstream_client& client, const std::string& base, sample& s) {
  const json j = json::parse(fetch_body(client, base + "/debug/actors"), nullptr, false);
  if (!j.is_object()) return;
  s.actors = j.value("actors_running", -1.0);
  s.connections = j.value("connections", -1.0);
  s.coordinators = j.value("coordinators", -1.0);
  s.workers = j.value("workers", -1.0);
  s.downstream_inflight = j.value("downstream_inflight", -1.0);
}

/// Least-squares slope of a field over t, per minute.
double slope_per_minute(const std::vector<sample>& s, double sample::*field) {
  if (s.size() < 2) return 0;
  double mt = 0, my = 0;
  for (auto& x : s) mt += x.t, my += x.*field;
  mt /= s.size(), my /= s.size();
  double num = 0, den = 0;
  for (auto& x : s) {
    num += (x.t - mt) * (x.*field - my);
    den += (x.t - mt) * (x.t - mt);
  }
  return den == 0 ? 0 : num / den * 60.0;
}

/// A port on 127.0.0.1 that nothing listens on: connections to it are refused.
int refused_port() {
  int port = 0;
  const int fd = listen_on_loopback(1, port);
  ::close(fd);
  return port;
}

/// The gateway's configuration; `generation` alternates a few values so that every reload
/// installs a configuration that differs from the one in force.
json soak_config(const std::string& b, const std::string& h, const std::string& localhost_b,
                 const std::string& refused, unsigned generation) {
  const bool odd = generation % 2 == 1;
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
      {{"name", "rates"}, {"url", b + "/jitter/{id}"}, {"timeout_ms", 250}, {"fallback", {{"rate", nullptr}}},
       {"hedge", {{"after_ms", odd ? 40 : 30}, {"max", 1}}}},
      {{"name", "shop"}, {"url", refused + "/shop/{id}"}, {"timeout_ms", 100}, {"fallback", {{"shop", nullptr}}},
       {"circuit", {{"failure_ratio", 0.5}, {"min_calls", 20}, {"window_ms", 10000}, {"open_ms", 2000}}}},
  });
  // Cache hits: a small id space, long TTLs; one section by host name (a lookup per connection).
  const json cached = json::array({
      {{"name", "base"}, {"url", b + "/ok/{id}"}, {"timeout_ms", 300}, {"required", true},
       {"cache_ttl_ms", odd ? 5000 : 4000}},
      {{"name", "named"}, {"url", localhost_b + "/ok/{id}"}, {"timeout_ms", 300}, {"cache_ttl_ms", 3000},
       {"fallback", json::object()}},
      {{"name", "rates"}, {"url", b + "/jitter/{id}"}, {"timeout_ms", 250}, {"fallback", json::object()},
       {"cache_ttl_ms", 1000}, {"hedge", {{"percentile", 90}, {"min_ms", 5}}}},
  });
  return {
      {"listen", "127.0.0.1:0"},
      {"max_inflight", 512},
      {"routes",
       json::array({
           {{"path", "/products/{id}"}, {"deadline_ms", odd ? 450 : 400}, {"sections", sections}},
           {{"path", "/cached/{id}"}, {"deadline_ms", 400}, {"sections", cached}},
           {{"path", "/hang/{id}"}, {"deadline_ms", 500},
            {"sections", {{{"name", "s"}, {"url", h + "/x/{id}"}, {"timeout_ms", 300}, {"required", true}}}}},
           {{"path", "/fail/{id}"}, {"deadline_ms", 500},
            {"sections", {{{"name", "s"}, {"url", b + "/fail/{id}"}, {"timeout_ms", 100}, {"required", true}}}}},
           {{"path", "/orders"},
            {"batch",
             {{"url", b + "/ok/{item}"}, {"timeout_ms", 200}, {"concurrency", odd ? 8 : 6}, {"max_items", 50}}}},
       })},
  };
}

/// The request mix, in percent of requests sent.
enum class kind { products, cached, hang, fail, nowhere, metrics, healthz, batch, abandoned };

kind pick_kind(unsigned roll) {
  if (roll < 40) return kind::products;   // degraded 200s: a slow, a failing, a hung, a refused section...
  if (roll < 55) return kind::cached;     // mostly cache hits
  if (roll < 63) return kind::hang;       // 504
  if (roll < 70) return kind::fail;       // 503
  if (roll < 74) return kind::nowhere;    // 404
  if (roll < 77) return kind::metrics;    // operations endpoints
  if (roll < 80) return kind::healthz;
  if (roll < 92) return kind::batch;      // POST, 20 items
  return kind::abandoned;                 // the client goes away after 50 ms (499)
}

} // namespace

int main(int argc, char** argv) {
  const options opt = parse_options(argc, argv);
  ::signal(SIGPIPE, SIG_IGN);

  // Downstreams: healthy, slow, jittery, failing, flaky, not-JSON on one server; hanging on a
  // silent one; a port that refuses.
  test_server down{256};
  std::atomic<unsigned> flaky{0}, jitter{0};
  down.get(R"(/ok/(\w+))", [](const httplib::Request& req, httplib::Response& res) {
    res.set_content(json{{"id", req.matches[1].str()}, {"title", "item"}, {"stock", 3},
                         {"promo", {{"id", "p" + req.matches[1].str()}}}}.dump(), "application/json");
  });
  down.get(R"(/slow/(\w+))", [&](const httplib::Request& req, httplib::Response& res) {
    down.delay(milliseconds{20 + std::hash<std::string>{}(req.matches[1].str()) % 120});
    res.set_content(R"({"amount": 12.5, "currency": "CNY"})", "application/json");
  });
  // One call in eight takes 150 ms, the rest 5 ms: what a hedge is for.
  down.get(R"(/jitter/\w+)", [&](const httplib::Request&, httplib::Response& res) {
    down.delay(milliseconds{++jitter % 8 == 0 ? 150 : 5});
    res.set_content(R"({"rate": 7.1})", "application/json");
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
  const std::string named = "http://localhost:" + std::to_string(down.port());
  const std::string refused = "http://127.0.0.1:" + std::to_string(refused_port());

  unsigned generation = 0;
  const std::string config_path = temp_file(soak_config(b, h, named, refused, generation).dump(2));
  gateway_process gw{opt.gather, config_path, opt.log};
  const int port = gw.port();
  if (port == 0) {
    std::fprintf(stderr, "soak: the gateway did not start; see %s\n", opt.log.c_str());
    return 2;
  }
  const std::string base = "http://127.0.0.1:" + std::to_string(port);
  std::printf("soak: gateway pid %d on %s, %d s at %d req/s, warm-up %d s, a reload every %d s, samples in %s\n",
              gw.pid(), base.c_str(), opt.seconds, opt.rps, opt.warmup, opt.reload_every, opt.csv.c_str());

  // Load: one event-driven client (keep-alive pool), a request every 1/rps s, mixed by a
  // fixed-seed generator. One request in five says `Connection: close` (connection churn).
  gather::downstream_client load;
  gather::downstream_client sampler; // its own loop: a sample is never queued behind the load
  std::mutex codes_mutex;
  std::map<int, long> codes;
  std::atomic<long> sent{0}, answered{0};
  std::mt19937 rng{42};
  json items = json::array();
  for (int i = 0; i < 20; ++i) items.push_back(i % 7 == 0 ? std::to_string(i) : "o" + std::to_string(i));
  const std::string batch_body = json{{"items", items}}.dump();
  const auto count = [&](int code) {
    std::lock_guard<std::mutex> lock(codes_mutex);
    ++codes[code];
    ++answered;
  };
  const auto submit_one = [&] {
    const kind k = pick_kind(rng() % 100);
    const std::string id = std::to_string(rng() % 500);
    gather::transfer_request req{base, "X-Request-Id: soak-" + std::to_string(sent.load()) + "\r\n", milliseconds{5000}};
    if (rng() % 5 == 0) req.header_lines += "Connection: close\r\n";
    switch (k) {
    case kind::products: req.url += "/products/" + id; break;
    case kind::cached: req.url += "/cached/" + std::to_string(rng() % 20); break;
    case kind::hang: req.url += "/hang/" + id; break;
    case kind::fail: req.url += "/fail/" + id; break;
    case kind::nowhere: req.url += "/nowhere/" + id; break;
    case kind::metrics: req.url += "/metrics"; break;
    case kind::healthz: req.url += "/healthz"; break;
    case kind::batch:
      req.url += "/orders";
      req.method = "POST";
      req.body = batch_body;
      req.header_lines += "Content-Type: application/json\r\n";
      break;
    case kind::abandoned: req.url += "/hang/" + id; break;
    }
    ++sent;
    // Counted once: by its completion, or as 499 by the cancel that got there first.
    auto counted = std::make_shared<std::atomic<bool>>(false);
    const auto id_of = load.submit(std::move(req), [&count, counted](gather::transfer_result&& r) {
      if (!counted->exchange(true))
        count(r.error == gather::transfer_error::none ? static_cast<int>(r.http_status) : -1);
    });
    if (k == kind::abandoned) {
      // Cancelled from a short-lived thread: the connection closes mid-request (the gateway logs 499).
      std::thread([&load, &count, id_of, counted] {
        std::this_thread::sleep_for(milliseconds{50});
        load.cancel(id_of);
        if (!counted->exchange(true))
          count(499);
      }).detach();
    }
  };

  std::ofstream csv(opt.csv);
  csv << "t_s,rss_kb,threads,fds,actors,connections,coordinators,workers,downstream_inflight,sent,answered,"
         "downstream_calls,reloads\n";
  std::vector<sample> samples;
  const auto start = steady::now();
  const auto period = std::chrono::microseconds(1000000 / std::max(1, opt.rps));
  auto next_request = start;
  auto next_sample = start;
  auto next_reload = start + std::chrono::seconds(opt.reload_every);
  for (;;) {
    const auto now = steady::now();
    const double t = std::chrono::duration<double>(now - start).count();
    if (now >= next_sample) {
      sample s;
      s.t = t;
      sample_process(gw.pid(), s);
      if (s.rss_kb == 0) {
        std::fprintf(stderr, "soak: the gateway died; see %s\n", opt.log.c_str());
        return 2;
      }
      sample_gateway(sampler, base, s);
      samples.push_back(s);
      csv << static_cast<long>(t) << ',' << s.rss_kb << ',' << s.threads << ',' << s.fds << ',' << s.actors << ','
          << s.connections << ',' << s.coordinators << ',' << s.workers << ',' << s.downstream_inflight << ','
          << sent.load() << ',' << answered.load() << ',' << down.calls() << ',' << generation << '\n'
          << std::flush;
      std::printf("t=%4lds rss=%6.0f kB threads=%2.0f fds=%4.0f actors=%4.0f conns=%3.0f sent=%ld answered=%ld "
                  "reloads=%u\n",
                  static_cast<long>(t), s.rss_kb, s.threads, s.fds, s.actors, s.connections, sent.load(),
                  answered.load(), generation);
      std::fflush(stdout);
      next_sample += std::chrono::seconds(10);
      if (t >= opt.seconds) break;
    }
    if (opt.reload_every > 0 && now >= next_reload) {
      std::ofstream(config_path) << soak_config(b, h, named, refused, ++generation).dump(2);
      ::kill(gw.pid(), SIGHUP);
      next_reload += std::chrono::seconds(opt.reload_every);
    }
    if (now >= next_request) {
      submit_one();
      next_request += period;
    }
    std::this_thread::sleep_until(std::min({next_request, next_sample, next_reload}));
  }

  // Let the last requests finish before the final verdict.
  for (int i = 0; i < 100 && answered.load() < sent.load(); ++i)
    std::this_thread::sleep_for(milliseconds{100});

  std::printf("\nrequests: sent %ld, answered %ld; by status:", sent.load(), answered.load());
  {
    std::lock_guard<std::mutex> lock(codes_mutex);
    for (auto& [code, n] : codes) std::printf(" %d:%ld", code, n);
  }
  std::printf("  (-1: no answer; 499: abandoned by the load generator)\n");
  // What the mix exercised, from the gateway's own counters.
  std::istringstream metrics(fetch_body(sampler, base + "/metrics"));
  std::map<std::string, double> totals;
  for (std::string line; std::getline(metrics, line);) {
    for (const char* family : {"gather_hedges_total", "gather_cache_events_total", "gather_config_reloads_total",
                               "gather_rejected_total", "gather_retries_total", "gather_circuit_transitions_total"})
      if (line.rfind(family, 0) == 0) {
        const auto brace = line.find('{'), close = line.rfind('}');
        std::string key = family;
        // Keep the label that tells the outcome apart (result, event, reason, to), not route/section.
        for (const char* label : {"result=\"", "event=\"", "reason=\"", "to=\""})
          if (auto at = line.find(label, brace); brace != std::string::npos && at != std::string::npos && at < close)
            key += std::string{"{"} + line.substr(at, line.find('"', at + std::strlen(label)) - at + 1) + "}";
        totals[key] += std::atof(line.substr(line.rfind(' ') + 1).c_str());
      }
  }
  std::printf("gateway counters:");
  for (auto& [key, n] : totals) std::printf(" %s=%.0f", key.c_str(), n);
  std::printf("\n");

  std::vector<sample> after;
  for (auto& s : samples)
    if (s.t >= opt.warmup) after.push_back(s);
  if (after.size() < 3) {
    std::printf("verdict: too few samples after the %d s warm-up to judge growth\n", opt.warmup);
    return 0;
  }
  const auto& first = after.front();
  const auto& last = after.back();
  const auto report = [&](const char* name, double sample::*field) {
    const auto [lo, hi] = std::minmax_element(after.begin(), after.end(),
                                              [field](auto& a, auto& b) { return a.*field < b.*field; });
    const double slope = slope_per_minute(after, field);
    std::printf("  %-12s %9.0f -> %9.0f (min %.0f, max %.0f), slope %+.2f /min\n", name, first.*field, last.*field,
                (*lo).*field, (*hi).*field, slope);
    return slope;
  };
  std::printf("after warm-up (%zu samples, t=%.0f..%.0f s):\n", after.size(), first.t, last.t);
  const double rss_slope = report("rss_kb", &sample::rss_kb);
  const double thread_slope = report("threads", &sample::threads);
  const double fd_slope = report("fds", &sample::fds);
  const double actor_slope = report("actors", &sample::actors);
  report("connections", &sample::connections);
  report("coordinators", &sample::coordinators);
  // Growth: RSS up more than 1 MiB after the warm-up with a trend above 256 kB/min (15 MB an hour),
  // or a thread, descriptor or actor trend above noise (the instantaneous counts swing with the
  // requests in flight at the sampling moment, so a trend, not a difference, decides).
  const bool rss_grew = last.rss_kb - first.rss_kb > 1024 && rss_slope > 256;
  const bool threads_grew = last.threads > first.threads + 2 && thread_slope > 0.5;
  const bool fds_grew = last.fds > first.fds + 16 && fd_slope > 1;
  const bool actors_grew = last.actors > first.actors + 32 && actor_slope > 1;
  std::printf("verdict: rss %s, threads %s, fds %s, actors %s\n", rss_grew ? "GREW" : "flat",
              threads_grew ? "GREW" : "flat", fds_grew ? "GREW" : "flat", actors_grew ? "GREW" : "flat");
  std::remove(config_path.c_str());
  return rss_grew || threads_grew || fds_grew || actors_grew ? 1 : 0;
}
