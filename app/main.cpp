// gather: the command line (docs/cli.md).
#include <arpa/inet.h>
#include <csignal>
#include <optional>
#include <vector>
#include <cstdio>
#include <iostream>
#include <pthread.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>

#include <chrono>
#include <ctime>

#include "gather/actors/serving_config.hpp"
#include "gather/admission/auth_check.hpp"
#include "gather/config/config.hpp"
#include "gather/demo.hpp"
#include "gather/downstream/grpc/proto_catalog.hpp"
#include "gather/front/tls_context.hpp"
#include "gather/gateway.hpp"
#include "gather/cluster/cluster_transport.hpp"
#include "gather/cluster/worker_node.hpp"
#include "gather/ops/request_log.hpp"

namespace {

constexpr int exit_invalid_config = 2;

/// SIGINT/SIGTERM (and SIGHUP) are blocked in every thread (so none is interrupted) and taken
/// here by sigwait.
sigset_t termination_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

/// What `serve` waits for: termination, or SIGHUP (reload the config file). A node ignores SIGHUP
/// (it stays blocked and pending: it has no file to read).
sigset_t serve_signals() {
  auto set = termination_signals();
  sigaddset(&set, SIGHUP);
  return set;
}

/// The config, with the problems only its files show (TLS certificates and keys, JWK sets, the
/// gRPC sections' descriptors, which it then holds) added.
gather::config_result load_checked(const std::string& file) {
  auto result = gather::load_config_file(file);
  if (!result.value)
    return result;
  if (result.value->tls)
    result.problems = gather::tls_problems(*result.value->tls);
  if (result.value->cluster && result.value->cluster->tls)
    for (auto& problem : gather::cluster_tls_problems(
           *result.value->cluster->tls,
           {"cluster.tls.cert_file", "cluster.tls.key_file", "cluster.tls.ca_file"}))
      result.problems.push_back(problem);
  for (auto& problem : gather::auth_problems(*result.value))
    result.problems.push_back(std::move(problem));
  for (auto& problem : gather::upstream_registry{}.check(*result.value)) // its TLS files as OpenSSL reads them
    result.problems.push_back(std::move(problem));
  for (auto& problem : gather::attach_proto_catalog(*result.value))
    result.problems.push_back(std::move(problem));
  if (!result.problems.empty())
    result.value.reset();
  return result;
}

int report_problems(const gather::config_result& result) {
  for (const auto& problem : result.problems)
    std::cerr << problem << "\n";
  return exit_invalid_config;
}

/// Every connection and downstream socket is a descriptor: take all the system allows (the soft
/// limit is often 1024, far below max_connections), and say so when even that is too few.
void raise_descriptor_limit(const gather::config& cfg) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0)
    return;
  limit.rlim_cur = limit.rlim_max;
  setrlimit(RLIMIT_NOFILE, &limit);
  getrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < cfg.inbound.max_connections + 1024)
    std::cerr << "gather: warning: the descriptor limit (" << limit.rlim_cur
              << ") is below max_connections + 1024 (" << cfg.inbound.max_connections + 1024
              << "): connections beyond it wait in the accept queue\n";
}

/// SIGINT/SIGTERM: /readyz says 503 at once; the gateway keeps accepting and serving for
/// drain_delay_ms (the balancer's time to take it out of its list), or until a second signal;
/// then it stops accepting and lets the requests in flight finish.
void drain_after(gather::gateway& gw, int signal) {
  gw.begin_drain();
  const auto delay = gw.serving()->cfg.drain_delay;
  std::cerr << "gather: signal " << signal << ", /readyz says draining";
  if (delay.count() > 0) {
    std::cerr << "; serving " << delay.count() << " ms more, then draining requests in flight" << std::endl;
    gather::write_log_line(R"({"event":"drain_delay","ms":)" + std::to_string(delay.count()) + "}");
    auto set = termination_signals();
    const auto end = std::chrono::steady_clock::now() + delay;
    for (auto left = delay; left.count() > 0;
         left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now())) {
      const timespec wait{static_cast<time_t>(left.count() / 1000), static_cast<long>(left.count() % 1000) * 1000000};
      if (sigtimedwait(&set, nullptr, &wait) > 0) // a second signal: no more waiting
        break;
    }
  } else {
    std::cerr << ", draining requests in flight" << std::endl;
  }
  gw.stop();
}

/// Serves until SIGINT/SIGTERM, then drains: requests in flight finish (each by its deadline).
/// SIGHUP re-reads `config_file` (none for the demo) and puts it in force when valid. The reload
/// runs here, on the main thread, which serves nothing: reading and checking the file holds no
/// event loop, and installing it is a pointer swap.
int serve(gather::config cfg, const std::string& listen, const std::string& banner = {},
          const std::string& config_file = {}) {
  raise_descriptor_limit(cfg);
  try {
    gather::gateway gw{std::move(cfg)};
    int port = gw.start(listen);
    auto host = gather::split_host_port(listen.empty() ? gw.cfg().listen : listen)->first;
    std::cout << "listening on " << (gw.cfg().tls ? "https://" : "http://") << host << ":" << port << std::endl;
    if (gw.cfg().admin)
      std::cout << "admin listening on http://" << gather::split_host_port(gw.cfg().admin->listen)->first
                << ":" << gw.admin_port() << std::endl;
    if (!banner.empty()) {
      std::string text = banner;
      for (auto at = text.find("{base}"); at != std::string::npos; at = text.find("{base}"))
        text.replace(at, 6, "http://" + host + ":" + std::to_string(port));
      std::cout << text << std::flush;
    }
    auto set = serve_signals();
    int signal = 0;
    while (sigwait(&set, &signal) == 0 && signal == SIGHUP) {
      if (config_file.empty())
        gather::write_log_line(R"({"event":"config_reload","result":"skipped",)"
                               R"("detail":"the demo has no configuration file to re-read"})");
      else
        gw.reload(load_checked(config_file), config_file);
    }
    drain_after(gw, signal);
  } catch (const std::exception& e) {
    std::cerr << "gather: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

/// What `gather node` was asked for on its command line.
struct node_flags {
  std::string listen;
  std::vector<std::string> allow;
  bool allow_any = false;
  bool insecure = false;
  std::string tls_cert, tls_key, tls_ca;
};

/// 127.0.0.0/8, ::1 and localhost: a plain node there is reachable only from this machine.
bool loopback(const std::string& host) {
  if (host == "localhost" || host == "::1" || host == "[::1]")
    return true;
  in_addr addr{};
  return inet_pton(AF_INET, host.c_str(), &addr) == 1 && (ntohl(addr.s_addr) >> 24) == 127;
}

/// The node's options from its flags, or every reason it must not start (exit 2).
std::optional<gather::node_options> node_options_of(const node_flags& flags,
                                                    std::vector<std::string>& problems) {
  gather::node_options options;
  const auto address = gather::split_host_port(flags.listen);
  if (!address)
    problems.push_back("--listen: must be host:port");
  if (flags.allow.empty() && !flags.allow_any)
    problems.push_back("refusing to start: give --allow ORIGIN (repeated; scheme://host:port) for each "
                       "downstream origin this node may call, or --allow-any: a node runs the calls "
                       "its peers send it, so without a list it would be an open relay");
  if (!flags.allow.empty() && flags.allow_any)
    problems.push_back("--allow and --allow-any exclude each other");
  if (flags.allow_any) {
    options.origins = gather::origin_allowlist::any();
  } else {
    std::string problem;
    auto list = gather::origin_allowlist::of({flags.allow.begin(), flags.allow.end()}, problem);
    if (list)
      options.origins = std::move(*list);
    else
      problems.push_back(problem);
  }
  const int tls_flags = !flags.tls_cert.empty() + !flags.tls_key.empty() + !flags.tls_ca.empty();
  if (tls_flags == 3) {
    options.tls = gather::cluster_tls_config{flags.tls_cert, flags.tls_key, flags.tls_ca};
    for (auto& problem : gather::cluster_tls_problems(*options.tls, {"--tls-cert", "--tls-key", "--tls-ca"}))
      problems.push_back(problem);
  } else if (tls_flags != 0) {
    problems.push_back("--tls-cert, --tls-key and --tls-ca go together: give all three or none");
  } else if (address && !loopback(address->first) && !flags.insecure) {
    problems.push_back("refusing to listen on " + flags.listen + " without TLS: anyone who reaches "
                       "the port could send this node work; give --tls-cert, --tls-key and --tls-ca "
                       "(mutual TLS), or --insecure to accept plain TCP from any peer");
  }
  if (!problems.empty())
    return std::nullopt;
  return options;
}

/// A cluster worker node until SIGINT/SIGTERM.
int run_node(const node_flags& flags) {
  std::vector<std::string> problems;
  auto options = node_options_of(flags, problems);
  if (!options) {
    for (const auto& problem : problems)
      std::cerr << "gather node: " << problem << "\n";
    return exit_invalid_config;
  }
  const auto address = gather::split_host_port(flags.listen);
  try {
    const bool tls = options->tls.has_value();
    gather::worker_node node{std::move(*options)};
    int port = node.start(address->first, address->second);
    std::cout << "listening on " << address->first << ":" << port << (tls ? " (mutual TLS)" : "")
              << std::endl;
    auto set = termination_signals();
    int signal = 0;
    sigwait(&set, &signal);
    std::cerr << "gather node: signal " << signal << ", stopping\n";
  } catch (const std::exception& e) {
    std::cerr << "gather node: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  // Sockets never raise SIGPIPE (Asio sends with MSG_NOSIGNAL); stderr, the log, may be a pipe
  // whose reader is gone: a log line then fails, the gateway goes on.
  std::signal(SIGPIPE, SIG_IGN);
  auto set = serve_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr); // before any thread exists, so all inherit it

  CLI::App app{"Gather: an actor-model scatter-gather API gateway"};
  app.set_version_flag("--version", std::string{"gather "} + GATHER_VERSION);
  app.require_subcommand(1);

  std::string listen, config_file;
  auto* demo = app.add_subcommand("demo", "Run the gateway on built-in simulated downstreams");
  demo->add_option("--listen", listen, "host:port to listen on (port 0 picks one)");
  auto* serve_cmd = app.add_subcommand("serve", "Run the gateway on a configuration file");
  serve_cmd->add_option("--config", config_file, "configuration file (JSON)")->required();
  serve_cmd->add_option("--listen", listen, "host:port, overrides the file's listen");
  auto* check = app.add_subcommand("check", "Validate a configuration file");
  check->add_option("--config", config_file, "configuration file (JSON)")->required();
  node_flags flags;
  auto* node = app.add_subcommand("node", "Run a cluster worker node");
  node->add_option("--listen", flags.listen, "host:port to publish the node on")->required();
  node->add_option("--allow", flags.allow,
                   "a downstream origin (scheme://host:port) this node may call; repeat for more");
  node->add_flag("--allow-any", flags.allow_any, "let this node call any origin");
  node->add_flag("--insecure", flags.insecure,
                 "listen without TLS on an address other than loopback");
  node->add_option("--tls-cert", flags.tls_cert, "this node's certificate chain (PEM)");
  node->add_option("--tls-key", flags.tls_key, "its private key (PEM)");
  node->add_option("--tls-ca", flags.tls_ca, "the CA that must have signed every peer (PEM)");

  CLI11_PARSE(app, argc, argv);

  if (*check) {
    auto result = load_checked(config_file);
    if (!result.value)
      return report_problems(result);
    std::size_t sections = 0;
    for (const auto& route : result.value->routes)
      sections += route.sections.size();
    std::cout << "ok: " << config_file << ": " << result.value->routes.size() << " routes, "
              << sections << " sections, listen " << result.value->listen << "\n";
    return 0;
  }
  if (*serve_cmd) {
    auto result = load_checked(config_file);
    if (!result.value)
      return report_problems(result);
    if (!listen.empty() && !gather::split_host_port(listen)) {
      std::cerr << "--listen: must be host:port\n";
      return exit_invalid_config;
    }
    return serve(std::move(*result.value), listen, {}, config_file);
  }
  if (*demo) {
    gather::demo_downstreams downstreams;
    auto result = gather::load_config(downstreams.config_json(listen.empty() ? "127.0.0.1:8080" : listen));
    if (!result.value)
      return report_problems(result);
    return serve(std::move(*result.value), "", downstreams.banner());
  }
  return run_node(flags);
}
