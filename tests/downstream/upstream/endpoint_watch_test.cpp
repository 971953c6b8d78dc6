// endpoint_watch (endpoint_lookup.hpp, docs/upstreams.md "Where the endpoints come from"): c-ares on
// a real event loop, asking a real DNS server in another process (tests/support/dns_server.py,
// python3-dnslib, on 127.0.0.1) through endpoint_watch_options::servers; /etc/hosts read as the
// system's (localhost). No query leaves the machine.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <mutex>
#include <thread>

#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>

#include "gather/downstream/upstream/endpoint_lookup.hpp"
#include "support/dns_stand_in.hpp"
#include "support/private_etc.hpp"
#include "support/test_server.hpp"

using namespace std::chrono_literals;
using gather::endpoint_source;
using gather::lookup_answer;
using gather::lookup_result;
using gather::test::dns_stand_in;
using gather::test::eventually;
using nlohmann::json;

namespace {

/// A watch on a loop of its own thread, made and destroyed there; its answers kept in order.
class watched_lookups {
public:
  watched_lookups(endpoint_source source, std::chrono::milliseconds refresh, std::size_t max_endpoints,
                  gather::endpoint_watch_options options = {}) {
    on_loop([&] {
      watch_ = std::make_unique<gather::endpoint_watch>(
          loop_, std::move(source), refresh, max_endpoints,
          [this](lookup_answer answer) {
            std::lock_guard<std::mutex> lock(mutex_);
            on_loop_thread_ = on_loop_thread_ && std::this_thread::get_id() == thread_.get_id();
            answers_.push_back(std::move(answer));
          },
          std::move(options));
    });
  }
  ~watched_lookups() {
    stop();
    work_.reset();
    thread_.join();
  }
  /// Destroys the watch on its loop; the answers stay readable.
  void stop() {
    on_loop([&] { watch_.reset(); });
  }
  std::size_t count() {
    std::lock_guard<std::mutex> lock(mutex_);
    return answers_.size();
  }
  lookup_answer answer(std::size_t i) {
    std::lock_guard<std::mutex> lock(mutex_);
    return answers_.at(i);
  }
  /// Waits for the (n+1)th answer.
  lookup_answer wait(std::size_t n, std::chrono::milliseconds limit = 10s) {
    REQUIRE(eventually([&] { return count() > n; }, limit));
    return answer(n);
  }
  /// The first answer from the (n+1)th on that satisfies `pred`.
  lookup_answer wait_for(std::size_t from, const std::function<bool(const lookup_answer&)>& pred) {
    for (std::size_t i = from;; ++i) {
      auto a = wait(i);
      if (pred(a))
        return a;
    }
  }
  bool all_on_loop_thread() {
    std::lock_guard<std::mutex> lock(mutex_);
    return on_loop_thread_;
  }

private:
  void on_loop(const std::function<void()>& what) {
    std::promise<void> ran;
    boost::asio::post(loop_, [&] {
      what();
      ran.set_value();
    });
    ran.get_future().wait();
  }

  boost::asio::io_context loop_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_{loop_.get_executor()};
  std::thread thread_{[this] { loop_.run(); }};
  std::unique_ptr<gather::endpoint_watch> watch_;
  std::mutex mutex_;
  std::vector<lookup_answer> answers_;
  bool on_loop_thread_ = true;
};

endpoint_source dns_source(const std::string& name, std::uint16_t port) {
  endpoint_source s;
  s.what = endpoint_source::kind::dns;
  s.name = name;
  s.port = port;
  return s;
}

endpoint_source srv_source(const std::string& name) {
  endpoint_source s;
  s.what = endpoint_source::kind::srv;
  s.name = name;
  return s;
}

gather::endpoint_watch_options asking(const dns_stand_in& dns, std::chrono::milliseconds bound = 0ms) {
  gather::endpoint_watch_options o;
  o.servers = dns.servers();
  o.lookup_timeout = bound;
  return o;
}

/// "address:port/weight@name" of each endpoint, sorted: what a test compares.
std::vector<std::string> listing(const lookup_answer& a) {
  std::vector<std::string> out;
  for (const auto& e : a.endpoints)
    out.push_back(e.address + ":" + std::to_string(e.port) + "/" + std::to_string(e.weight) + "@" + e.name);
  std::sort(out.begin(), out.end());
  return out;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::size_t process_threads() {
  auto tasks = std::filesystem::directory_iterator("/proc/self/task");
  return static_cast<std::size_t>(std::distance(std::filesystem::begin(tasks), std::filesystem::end(tasks)));
}

std::string file_text(const std::string& path) {
  std::ifstream in{path};
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// The line every private hosts file of these tests carries: the inner test checks it reads one.
const std::string hosts_marker = "# gather-test: a private /etc/hosts\n";
const std::string inner_hosts_test = "endpoint watch inside a mount namespace: /etc/hosts rewritten in place";

} // namespace

TEST_CASE("endpoint watch: IP literals answer once, at once, and are never looked up again", "[upstream][dns]") {
  endpoint_source s;
  s.entries = {{"127.0.0.2", 9002, 1}, {"FD00:0::7", 9003, 2}};
  watched_lookups watch(s, 20ms, 100);
  auto a = watch.wait(0);
  CHECK(a.result == lookup_result::ok);
  CHECK(listing(a) == std::vector<std::string>{"127.0.0.2:9002/1@", "fd00::7:9003/2@"});
  // Ten refreshes' time: still the one answer.
  std::this_thread::sleep_for(200ms);
  CHECK(watch.count() == 1);
  CHECK(watch.all_on_loop_thread());
}

TEST_CASE("endpoint watch: a name's A and AAAA addresses, each an endpoint of the port", "[upstream][dns]") {
  dns_stand_in dns(json{{"names", {{"svc.test", {{"A", {"127.0.0.2", "127.0.0.3"}}, {"AAAA", {"::1"}}}}}}});
  const auto threads_before = process_threads();
  watched_lookups watch(dns_source("svc.test", 8080), 60s, 100, asking(dns));
  auto a = watch.wait(0);
  // The loop's own thread and no other: c-ares asked on the loop (getaddrinfo would need one).
  CHECK(process_threads() == threads_before + 1);
  REQUIRE(a.result == lookup_result::ok);
  CHECK(listing(a) == std::vector<std::string>{"127.0.0.2:8080/1@svc.test", "127.0.0.3:8080/1@svc.test",
                                               "::1:8080/1@svc.test"});
  CHECK(has(a.detail, "3 endpoints"));
  CHECK(watch.all_on_loop_thread());
}

TEST_CASE("endpoint watch: names in /etc/hosts resolve as the system's resolver has them", "[upstream][dns]") {
  // The machine's own resolv.conf and /etc/hosts (read, never written): localhost is a hosts
  // entry, answered before any server is asked.
  endpoint_source s;
  s.entries = {{"localhost", 7000, 4}, {"127.0.0.9", 7001, 1}};
  watched_lookups watch(s, 60s, 100);
  auto a = watch.wait(0);
  REQUIRE(a.result == lookup_result::ok);
  auto found = listing(a);
  CHECK(std::count(found.begin(), found.end(), "127.0.0.1:7000/4@localhost") == 1);
  CHECK(std::count(found.begin(), found.end(), "127.0.0.9:7001/1@") == 1);
}

TEST_CASE("endpoint watch: SRV, the lowest priority's targets with their ports and weights", "[upstream][dns]") {
  json zone{{"names",
             {{"_grpc._tcp.lib.test",
               {{"SRV", json::array({{{"priority", 10}, {"weight", 5}, {"port", 8081}, {"target", "a.test"}},
                                     {{"priority", 10}, {"weight", 0}, {"port", 8082}, {"target", "b.test"}},
                                     {{"priority", 20}, {"weight", 50}, {"port", 8083}, {"target", "c.test"}}})}}},
              {"a.test", {{"A", {"127.0.0.2"}}}},
              {"b.test", {{"A", {"127.0.0.3", "127.0.0.4"}}}},
              {"c.test", {{"A", {"127.0.0.5"}}}}}}};
  dns_stand_in dns(zone);
  watched_lookups watch(srv_source("_grpc._tcp.lib.test"), 60s, 100, asking(dns));
  auto a = watch.wait(0);
  REQUIRE(a.result == lookup_result::ok);
  CHECK(listing(a) == std::vector<std::string>{"127.0.0.2:8081/5@a.test", "127.0.0.3:8082/1@b.test",
                                               "127.0.0.4:8082/1@b.test"});
}

TEST_CASE("endpoint watch: SRV weights above 100 are scaled down together", "[upstream][dns]") {
  json zone{{"names",
             {{"_h._tcp.w.test",
               {{"SRV", json::array({{{"priority", 1}, {"weight", 60000}, {"port", 1}, {"target", "a.test"}},
                                     {{"priority", 1}, {"weight", 30000}, {"port", 2}, {"target", "a.test"}}})}}},
              {"a.test", {{"A", {"127.0.0.2"}}}}}}};
  dns_stand_in dns(zone);
  watched_lookups watch(srv_source("_h._tcp.w.test"), 60s, 100, asking(dns));
  auto a = watch.wait(0);
  REQUIRE(a.result == lookup_result::ok);
  CHECK(listing(a) == std::vector<std::string>{"127.0.0.2:1/100@a.test", "127.0.0.2:2/50@a.test"});
}

TEST_CASE("endpoint watch: an SRV record naming itself is not followed", "[upstream][dns]") {
  json zone{{"names",
             {{"_h._tcp.self.test",
               {{"A", {"127.0.0.2"}},
                {"SRV", json::array({{{"priority", 1}, {"weight", 1}, {"port", 80}, {"target", "_h._tcp.self.test"}},
                                     {{"priority", 1}, {"weight", 1}, {"port", 81}, {"target", "."}}})}}}}}};
  dns_stand_in dns(zone);
  watched_lookups watch(srv_source("_h._tcp.self.test"), 60s, 100, asking(dns));
  auto a = watch.wait(0);
  CHECK(a.result == lookup_result::empty);
  CHECK(a.endpoints.empty());
  CHECK(has(a.detail, "naming the SRV name itself skipped"));
  CHECK(has(a.detail, "target \".\" skipped"));
}

TEST_CASE("endpoint watch: 10,000 addresses are cut to max_endpoints, and the detail says so", "[upstream][dns]") {
  // One DNS message carries about 4,000 A records (64 KiB over TCP, after a truncated UDP
  // answer): three targets of that many bring 12,000 endpoints.
  json zone{{"names",
             {{"_h._tcp.big.test",
               {{"SRV", json::array({{{"priority", 1}, {"weight", 1}, {"port", 1}, {"target", "big.test"}},
                                     {{"priority", 1}, {"weight", 1}, {"port", 2}, {"target", "big.test"}},
                                     {{"priority", 1}, {"weight", 1}, {"port", 3}, {"target", "big.test"}}})}}},
              {"big.test", {{"A_count", 10000}}}}}};
  dns_stand_in dns(zone);
  SECTION("one name") {
    watched_lookups watch(dns_source("big.test", 80), 60s, 100, asking(dns));
    auto a = watch.wait(0);
    REQUIRE(a.result == lookup_result::ok);
    CHECK(a.endpoints.size() == 100);
    CHECK(has(a.detail, "max_endpoints 100"));
  }
  SECTION("SRV targets") {
    watched_lookups watch(srv_source("_h._tcp.big.test"), 60s, 100, asking(dns));
    auto a = watch.wait(0);
    REQUIRE(a.result == lookup_result::ok);
    CHECK(a.endpoints.size() == 100);
    auto from = a.detail.find("cut from ");
    REQUIRE(from != std::string::npos);
    CHECK(std::stoul(a.detail.substr(from + 9)) > 10000);
  }
}

TEST_CASE("endpoint watch: answers that change under a running watch reach done", "[upstream][dns]") {
  dns_stand_in dns(json{{"names", {{"svc.test", {{"A", {"127.0.0.2"}}}}}}});
  watched_lookups watch(dns_source("svc.test", 80), 50ms, 100, asking(dns));
  CHECK(listing(watch.wait(0)) == std::vector<std::string>{"127.0.0.2:80/1@svc.test"});
  dns.set_zone(json{{"names", {{"svc.test", {{"A", {"127.0.0.3", "127.0.0.4"}}}}}}});
  auto changed = watch.wait_for(1, [](const lookup_answer& a) { return a.endpoints.size() == 2; });
  CHECK(listing(changed) == std::vector<std::string>{"127.0.0.3:80/1@svc.test", "127.0.0.4:80/1@svc.test"});
}

TEST_CASE("endpoint watch: a lookup that fails reports error and the next succeeds", "[upstream][dns]") {
  dns_stand_in dns(json{{"names", {{"svc.test", {{"fail", true}}}}}});
  watched_lookups watch(dns_source("svc.test", 80), 100ms, 100, asking(dns, 2000ms));
  auto failed = watch.wait(0);
  CHECK(failed.result == lookup_result::error);
  CHECK(failed.endpoints.empty());
  CHECK(has(failed.detail, "svc.test"));
  dns.set_zone(json{{"names", {{"svc.test", {{"A", {"127.0.0.2"}}}}}}});
  auto ok = watch.wait_for(1, [](const lookup_answer& a) { return a.result == lookup_result::ok; });
  CHECK(listing(ok) == std::vector<std::string>{"127.0.0.2:80/1@svc.test"});
}

TEST_CASE("endpoint watch: a server that stops answering ends the lookup at its bound", "[upstream][dns]") {
  dns_stand_in dns(json{{"names", {{"svc.test", {{"A", {"127.0.0.2"}}}}}}});
  watched_lookups watch(dns_source("svc.test", 80), 400ms, 100, asking(dns, 300ms));
  REQUIRE(watch.wait(0).result == lookup_result::ok);
  dns.set_zone(json{{"silent", true}, {"names", {{"svc.test", {{"A", {"127.0.0.2"}}}}}}});
  auto silent = watch.wait_for(1, [](const lookup_answer& a) { return a.result != lookup_result::ok; });
  CHECK(silent.result == lookup_result::error);
  CHECK(has(silent.detail, "no answer within 300 ms"));
  dns.set_zone(json{{"names", {{"svc.test", {{"A", {"127.0.0.5"}}}}}}});
  auto back = watch.wait_for(2, [](const lookup_answer& a) { return a.result == lookup_result::ok; });
  CHECK(listing(back) == std::vector<std::string>{"127.0.0.5:80/1@svc.test"});
}

TEST_CASE("endpoint watch: a name that does not exist is empty, in words", "[upstream][dns]") {
  dns_stand_in dns(json{{"names", json::object()}});
  watched_lookups watch(dns_source("missing.test", 80), 60s, 100, asking(dns));
  auto a = watch.wait(0);
  CHECK(a.result == lookup_result::empty);
  CHECK(has(a.detail, "missing.test"));
}

TEST_CASE("endpoint watch: destroyed during a lookup, no answer comes after", "[upstream][dns]") {
  dns_stand_in dns(json{{"silent", true}, {"names", {{"svc.test", {{"A", {"127.0.0.2"}}}}}}});
  watched_lookups watch(dns_source("svc.test", 80), 60s, 100, asking(dns));
  REQUIRE(dns.saw_query("svc.test"));
  watch.stop();
  dns.set_zone(json{{"names", {{"svc.test", {{"A", {"127.0.0.2"}}}}}}});
  std::this_thread::sleep_for(100ms); // what an answer still under way would take to come
  CHECK(watch.count() == 0);
}

TEST_CASE("endpoint watch: an endpoints list of names and literals, one failing name fails the lookup", "[upstream][dns]") {
  dns_stand_in dns(json{{"names", {{"a.test", {{"A", {"127.0.0.2"}}}}, {"b.test", {{"A", {"127.0.0.3"}}}}}}});
  endpoint_source s;
  s.entries = {{"a.test", 81, 7}, {"127.0.0.9", 82, 1}, {"b.test", 83, 2}};
  watched_lookups watch(s, 100ms, 100, asking(dns, 2000ms));
  CHECK(listing(watch.wait(0)) == std::vector<std::string>{"127.0.0.2:81/7@a.test", "127.0.0.3:83/2@b.test",
                                                           "127.0.0.9:82/1@"});
  // b.test's server fails: the whole lookup is an error (the upstream keeps its last good set),
  // not an answer without b.test's endpoints.
  dns.set_zone(json{{"names", {{"a.test", {{"A", {"127.0.0.2"}}}}, {"b.test", {{"fail", true}}}}}});
  auto failed = watch.wait_for(1, [](const lookup_answer& a) { return a.result != lookup_result::ok; });
  CHECK(failed.result == lookup_result::error);
  CHECK(has(failed.detail, "b.test"));
}

TEST_CASE("endpoint watch: destroyed from inside its own answer", "[upstream][dns]") {
  dns_stand_in dns(json{{"names", {{"svc.test", {{"A", {"127.0.0.2"}}}}}}});
  boost::asio::io_context loop;
  std::unique_ptr<gather::endpoint_watch> watch;
  int answers = 0;
  watch = std::make_unique<gather::endpoint_watch>(
      loop, dns_source("svc.test", 80), 10ms, 100,
      [&](lookup_answer) {
        ++answers;
        watch.reset();
      },
      asking(dns));
  // The loop runs out of work once the watch is gone: no timer, no socket left behind.
  loop.run_for(5s);
  CHECK(answers == 1);
  CHECK(loop.stopped());
}

TEST_CASE("endpoint watch: a private /etc/hosts, bind-mounted and rewritten in place, is read at each refresh", "[upstream][dns]") {
  // The watch runs in this binary again, under `unshare --mount` with a hosts file and a
  // resolv.conf (nameserver 127.0.0.1, where nobody answers) bind-mounted over the machine's for
  // that process alone: the system's resolver settings as the gateway reads them, none of the
  // machine's files touched, no query leaving the machine.
  if (!gather::test::can_make_mount_namespace()) {
    WARN("skipped: unshare --mount needs root (CI runs it)");
    return;
  }
  const std::string hosts = gather::test::temp_file("127.0.0.2 svc.internal\n" + hosts_marker, ".hosts");
  const std::string resolv = gather::test::temp_file("nameserver 127.0.0.1\noptions timeout:1 attempts:1\n", ".conf");
  auto r = gather::test::run_with_private_etc(hosts, resolv, "GATHER_TEST_HOSTS", inner_hosts_test);
  INFO(r.out << r.err);
  CHECK(gather::test::inner_run_passed(r)); // the inner test ran (not "No tests ran") and passed
  std::remove(hosts.c_str());
  std::remove(resolv.c_str());
}

// Hidden ([.]): run only by the test above, inside its mount namespace.
TEST_CASE("endpoint watch inside a mount namespace: /etc/hosts rewritten in place", "[.][upstream_inside]") {
  const char* path = std::getenv("GATHER_TEST_HOSTS");
  if (!path) {
    SUCCEED("GATHER_TEST_HOSTS is not set: run only by the test above, inside its namespace");
    return;
  }
  // Only ever the private copy: /etc/hosts is the file given (the bind mount holds).
  REQUIRE(has(file_text("/etc/hosts"), hosts_marker));
  REQUIRE(file_text("/etc/hosts") == file_text(path));
  endpoint_source s;
  s.entries = {{"svc.internal", 80, 1}};
  watched_lookups watch(s, 50ms, 100); // the system's resolv.conf and /etc/hosts: the private ones
  CHECK(listing(watch.wait(0)) == std::vector<std::string>{"127.0.0.2:80/1@svc.internal"});
  std::ofstream{path} << "127.0.0.3 svc.internal\n127.0.0.4 svc.internal\n" << hosts_marker;
  auto changed = watch.wait_for(1, [](const lookup_answer& a) { return a.endpoints.size() == 2; });
  CHECK(listing(changed) == std::vector<std::string>{"127.0.0.3:80/1@svc.internal", "127.0.0.4:80/1@svc.internal"});
  // Gone from the hosts file: the resolver asks DNS, where nobody answers: an error (the
  // upstream would keep its last good set), never an answer without the name.
  std::ofstream{path} << hosts_marker;
  auto gone = watch.wait_for(2, [](const lookup_answer& a) { return a.result != lookup_result::ok; });
  CHECK(gone.result == lookup_result::error);
}

TEST_CASE("endpoint origin: an IPv6 address in brackets", "[unit][upstream]") {
  CHECK(gather::endpoint_origin("http", {"10.0.0.7", 9002, 1, ""}) == "http://10.0.0.7:9002");
  CHECK(gather::endpoint_origin("https", {"fd00::7", 50051, 2, "lib.test"}) == "https://[fd00::7]:50051");
}
