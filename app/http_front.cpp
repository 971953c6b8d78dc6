// The inbound HTTP side. Checks run in the contract's order (no_route, method, size, overload,
// body); an admitted aggregate request becomes one coordinator actor, an admitted batch request one
// batch coordinator, and the handler thread waits on a reply_channel (the only blocking wait in
// Gather, forced by cpp-httplib's synchronous handlers) for the coordinator's answer, the client
// hanging up, or a hard limit.
#include "gather/http_front.hpp"

#include <random>
#include <string_view>
#include <stdexcept>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <caf/all.hpp>
#include <httplib.h>

#include "gather/batch_body.hpp"
#include "gather/batch_coordinator.hpp"
#include "gather/coordinator.hpp"
#include "gather/handler_pool.hpp"
#include "gather/http_reply.hpp"
#include "gather/metrics.hpp"
#include "gather/ops_endpoints.hpp"
#include "gather/request_log.hpp"
#include "gather/route_table.hpp"

namespace gather {

namespace {

using clock = std::chrono::steady_clock;

/// The socket of the connection this handler thread is serving (see front_server).
thread_local int current_client_fd = -1;
/// The request id chosen for the request this thread is handling.
thread_local std::string current_request_id;
/// Set when the answer leaves bytes of the request unread: the connection ends after it.
thread_local bool end_connection_after_answer = false;

/// How long a connection being ended may still send what it had in flight (see end_connection).
constexpr std::chrono::milliseconds linger_limit{1000};

// httplib's own connection loop. It is exported by libcpp-httplib but private in the header, so an
// override that wants to call it binds it by symbol name.
extern "C" bool httplib_process_and_close_socket(httplib::Server* self, int sock) __asm__(
  "_ZN7httplib6Server24process_and_close_socketEi");

/// A cpp-httplib server that remembers each connection's socket for the thread serving it: a
/// handler waiting for its coordinator also watches that socket, to cancel the request's
/// downstream calls when the client hangs up (httplib 0.11 offers no such hook).
class front_server : public httplib::Server {
public:
  int listen_fd() const { return svr_sock_; }

private:
  bool process_and_close_socket(int sock) override {
    current_client_fd = sock;
    bool ok = httplib_process_and_close_socket(this, sock);
    current_client_fd = -1;
    return ok;
  }
};

/// Ends the connection `fd` once the answer to a request whose body (or part of it) was left
/// unread has been written. httplib 0.11 would parse those bytes as the next request (request
/// smuggling), and `Connection: close` in a response does not stop its keep-alive loop. So: send
/// the answer's FIN, discard what the client still sends until it closes (at most linger_limit;
/// closing with unread data would reset the connection and could destroy the answer in flight),
/// then point the descriptor at /dev/null: httplib's next read fails, its loop ends and it closes
/// the descriptor as it always does.
void end_connection(int fd) {
  if (fd < 0)
    return;
  ::shutdown(fd, SHUT_WR);
  const auto until = std::chrono::steady_clock::now() + linger_limit;
  char discard[16384];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0)
      break;
    if (::recv(fd, discard, sizeof discard, 0) <= 0)
      break; // the client has closed (or reset): nothing more will come
  }
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd >= 0) {
    ::dup2(null_fd, fd);
    ::close(null_fd);
  }
}

/// Answers with `Connection: close` and really ends the connection afterwards (end_connection).
void close_after_answer(httplib::Response& res) {
  res.set_header("Connection", "close");
  end_connection_after_answer = true;
}

bool valid_request_id(const std::string& id) {
  if (id.empty() || id.size() > 64)
    return false;
  for (unsigned char c : id)
    if (!(std::isalnum(c) || c == '.' || c == '_' || c == '-'))
      return false;
  return true;
}

std::string new_request_id() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char* hex = "0123456789abcdef";
  std::string id(32, '0');
  for (int half = 0; half < 2; ++half) {
    auto bits = rng();
    for (int i = 0; i < 16; ++i, bits >>= 4)
      id[half * 16 + i] = hex[bits & 0xF];
  }
  return id;
}

std::string raw_path(const httplib::Request& req) {
  const auto& target = req.target.empty() ? req.path : req.target;
  return target.substr(0, target.find('?'));
}

bool has_body(const httplib::Request& req) {
  return req.has_header("Transfer-Encoding") ||
         (req.has_header("Content-Length") && req.get_header_value("Content-Length") != "0");
}

void send(httplib::Response& res, const http_reply& reply) {
  res.status = reply.status;
  for (const auto& [name, value] : reply.headers)
    res.set_header(name, value);
  res.set_header("X-Request-Id", current_request_id);
  res.set_content(reply.body, reply.content_type.c_str());
}

const char* code_for_status(int status) {
  switch (status) {
    case 404: return "no_route";
    case 405: return "method_not_allowed";
    case 413: return "payload_too_large";
    case 414: return "uri_too_long";
    case 415: return "unsupported_media_type";
    case 431: return "headers_too_large";
    case 503: return "overloaded";
    default: return status >= 500 ? "internal_error" : "bad_request";
  }
}

} // namespace

struct http_front::impl {
  const config& cfg;
  gateway_stats& stats;
  caf::actor_system& system;
  section_runtime runtime;
  front_server server;
  std::unique_ptr<handler_pool> pool; ///< made by bind(), handed to httplib by listen

  impl(const config& c, gateway_stats& s, caf::actor_system& sys, section_runtime rt)
    : cfg(c), stats(s), system(sys), runtime(rt) {
    server.set_tcp_nodelay(true); // without it Nagle + delayed ACK cost ~40 ms per response
    server.set_keep_alive_timeout(keep_alive_idle_seconds);
    server.set_keep_alive_max_count(1000);
    server.set_payload_max_length(cfg.max_body_bytes);
    server.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      return pre_route(req, res);
    });
    // pre_route answers every request but a batch POST with a body, which comes here to have its
    // body read (read_and_serve bounds it as it arrives).
    server.Post(".*", [this](const httplib::Request& req, httplib::Response& res,
                             const httplib::ContentReader& read) { read_and_serve(req, res, read); });
    // Anything httplib refuses by itself (malformed request, 413, 414) still gets the JSON body.
    // A request httplib refuses by itself was not read to its end: the connection ends after it.
    // One it refused before pre_route (no id yet: a malformed head, a 414) is also counted and
    // logged here, under the no_route label: its path, if any, was never read as one.
    server.set_error_handler([this](const httplib::Request&, httplib::Response& res) {
      if (!res.body.empty())
        return; // answered by Gather already
      const bool unseen = current_request_id.empty();
      if (unseen)
        current_request_id = new_request_id();
      const auto reply = error_reply(res.status, code_for_status(res.status), current_request_id);
      if (unseen)
        refuse(res, cfg.routes.size(), reply, clock::now());
      else
        send(res, reply);
      close_after_answer(res);
    });
    // Runs once each answer is written. The id belongs to one request: cleared here, so a request
    // that httplib refuses before pre_route (414, a malformed head) on a kept-alive connection gets
    // a fresh id from the error handler, not the previous request's.
    server.set_logger([](const httplib::Request&, const httplib::Response&) {
      current_request_id.clear();
      if (end_connection_after_answer) {
        end_connection_after_answer = false;
        end_connection(current_client_fd);
      }
    });
    server.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
      send(res, error_reply(500, "internal_error", current_request_id));
    });
  }

  httplib::Server::HandlerResponse pre_route(const httplib::Request& req, httplib::Response& res) {
    auto inbound_id = req.get_header_value("X-Request-Id");
    current_request_id = valid_request_id(inbound_id) ? inbound_id : new_request_id();
    // Only an admitted batch POST has its body read. Any other body (a GET's, one refused by
    // check()) is left unread, so the connection is closed after the answer: on a kept-alive
    // connection httplib would take the body's bytes for the next request (request smuggling).
    if (has_body(req) && !is_ops_path(req.path) && req.method == "POST" && !check(req))
      return httplib::Server::HandlerResponse::Unhandled; // read_and_serve()
    serve(req, res);
    if (has_body(req))
      close_after_answer(res);
    return httplib::Server::HandlerResponse::Handled;
  }

  /// A batch POST: its body is read here, refused with 413 as soon as it passes max_body_bytes.
  /// (httplib's own limit covers only a declared Content-Length: it reads a chunked body whole.)
  void read_and_serve(const httplib::Request& req, httplib::Response& res,
                      const httplib::ContentReader& read) {
    const auto arrived = clock::now();
    std::string body;
    bool too_large = false;
    // A multipart body is not a batch body, and httplib's multipart reader is not wanted here.
    const bool complete = !req.is_multipart_form_data() &&
                          read([&](const char* data, std::size_t size) {
                            if (body.size() + size > cfg.max_body_bytes) {
                              too_large = true;
                              return false;
                            }
                            body.append(data, size);
                            return true;
                          });
    if (!complete) {
      const auto match = match_route(cfg.routes, raw_path(req));
      refuse(res, match ? match->route : cfg.routes.size(),
             too_large ? error_reply(413, "payload_too_large", current_request_id)
                       : error_reply(400, "bad_request", current_request_id),
             arrived);
      close_after_answer(res); // the rest of the body is still unread
      return;
    }
    serve(req, res, body);
  }

  /// The checks that come before reading a body: route, method, declared size.
  std::optional<http_reply> check(const httplib::Request& req) {
    auto match = match_route(cfg.routes, raw_path(req));
    if (!match)
      return error_reply(404, "no_route", current_request_id);
    const auto& route = cfg.routes[match->route];
    const char* method = route.batch ? "POST" : "GET";
    if (req.method != method) {
      auto reply = error_reply(405, "method_not_allowed", current_request_id);
      reply.headers.emplace_back("Allow", method);
      return reply;
    }
    if (req.has_header("Content-Length")) {
      auto declared = req.get_header_value("Content-Length");
      if (declared.size() > 18 || std::stoull("0" + declared) > cfg.max_body_bytes)
        return error_reply(413, "payload_too_large", current_request_id);
    }
    // httplib would inflate a gzip/brotli body with no bound (max_body_bytes counts the compressed
    // bytes): a 0.5 MB gzip body became 500 MB in memory. Encoded bodies are refused unread.
    if (has_body(req) && req.has_header("Content-Encoding") &&
        req.get_header_value("Content-Encoding") != "identity")
      return error_reply(415, "unsupported_media_type", current_request_id);
    return std::nullopt;
  }

  void serve(const httplib::Request& req, httplib::Response& res, std::string_view body = {}) {
    const auto arrived = clock::now();
    if (is_ops_path(req.path)) {
      send(res, serve_ops(req.method, req.path, current_request_id,
                          ops_sources{cfg, stats, system, *runtime.client, *runtime.counters, *runtime.inflight, *runtime.cache,
                                      runtime.nodes}));
      return;
    }
    auto match = match_route(cfg.routes, raw_path(req));
    const auto route_index = match ? match->route : cfg.routes.size();
    if (auto refusal = check(req)) {
      refuse(res, route_index, *refusal, arrived);
      return;
    }
    const auto& route = cfg.routes[route_index];
    if (stats.inflight.fetch_add(1) >= static_cast<std::int64_t>(cfg.max_inflight)) {
      stats.inflight.fetch_sub(1);
      stats.overloaded.fetch_add(1, std::memory_order_relaxed);
      auto reply = error_reply(503, "overloaded", current_request_id);
      reply.headers.emplace_back("Retry-After", "1");
      refuse(res, route_index, reply, arrived);
      return;
    }
    if (route.batch) {
      send(res, batch(req, body, route_index, std::move(match->captures), arrived));
    } else {
      send(res, aggregate(req, route_index, std::move(match->captures), arrived));
    }
    stats.inflight.fetch_sub(1);
  }

  /// Answers without a coordinator: counted and logged here.
  void refuse(httplib::Response& res, std::size_t route_index, const http_reply& reply,
              clock::time_point arrived) {
    runtime.counters->request_done(route_index, reply.status, elapsed_us(arrived));
    const auto& route = route_index < cfg.routes.size() ? cfg.routes[route_index].path
                                                        : std::string{metrics::no_route_label};
    log_request(current_request_id, route, reply.status, elapsed_ms(arrived),
                std::string{"refused: "} + code_for_status(reply.status));
    send(res, reply);
  }

  http_reply aggregate(const httplib::Request& req, std::size_t route_index,
                       std::vector<std::pair<std::string, std::string>> captures,
                       clock::time_point arrived) {
    const auto& route = cfg.routes[route_index];
    auto job = std::make_shared<aggregate_job>();
    job->route = &route;
    job->route_index = route_index;
    job->runtime = runtime;
    job->channel = std::make_shared<reply_channel>();
    job->inbound = inbound_of(req, std::move(captures), arrived);
    auto channel = job->channel;
    auto coordinator_actor = system.spawn(coordinator, std::shared_ptr<const aggregate_job>(job));
    return await_answer(*channel, coordinator_actor, route_index, arrived + route.deadline, arrived);
  }

  /// A batch POST: the body is parsed here, on the handler thread (a 400 costs no actor), then one
  /// batch coordinator runs the items' calls.
  http_reply batch(const httplib::Request& req, std::string_view body_text, std::size_t route_index,
                   std::vector<std::pair<std::string, std::string>> captures,
                   clock::time_point arrived) {
    const auto& route = cfg.routes[route_index];
    auto body = parse_batch_body(body_text, route.batch->max_items);
    if (!body.problem.empty()) {
      runtime.counters->request_done(route_index, 400, elapsed_us(arrived));
      log_request(current_request_id, route.path, 400, elapsed_ms(arrived),
                  "bad batch body: " + body.problem);
      return error_reply(400, "bad_request", current_request_id, {}, body.problem);
    }
    auto job = std::make_shared<batch_job>();
    job->route = &route;
    job->route_index = route_index;
    job->runtime = runtime;
    job->channel = std::make_shared<reply_channel>();
    job->inbound = inbound_of(req, std::move(captures), arrived);
    job->plan = plan_batch(std::move(body.items), *route.batch, job->inbound);
    auto channel = job->channel;
    auto coordinator_actor = system.spawn(batch_coordinator, std::shared_ptr<const batch_job>(job));
    return await_answer(*channel, coordinator_actor, route_index, arrived + route.batch->deadline,
                        arrived);
  }

  /// The parts of the request a route may read; header names lower-case.
  static inbound_request inbound_of(const httplib::Request& req,
                                    std::vector<std::pair<std::string, std::string>> captures,
                                    clock::time_point arrived) {
    inbound_request in;
    in.request_id = current_request_id;
    in.arrived = arrived;
    in.captures = std::move(captures);
    for (const auto& [name, value] : req.params)
      in.query.emplace(name, value);
    for (const auto& [name, value] : req.headers) {
      std::string lower = name;
      for (auto& c : lower)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      in.headers.emplace(std::move(lower), value);
    }
    return in;
  }

  /// Waits for a coordinator's answer; stops the coordinator when the client hangs up or when the
  /// route's `deadline` plus handler_grace passes without an answer (then it answers 504 itself).
  http_reply await_answer(reply_channel& channel, const caf::actor& coordinator_actor,
                          std::size_t route_index, clock::time_point deadline,
                          clock::time_point arrived) {
    const auto& route = cfg.routes[route_index];
    const auto outcome = channel.wait(current_client_fd, deadline + handler_grace);
    if (outcome == reply_channel::outcome::replied)
      return channel.take();
    if (!channel.claim()) {
      // The coordinator is answering this very moment, and counts and logs that answer: use it.
      channel.wait(-1, clock::now() + handler_grace);
      return channel.take();
    }
    caf::anon_send_exit(coordinator_actor, caf::exit_reason::user_shutdown);
    if (outcome == reply_channel::outcome::client_gone) {
      stats.client_gone.fetch_add(1, std::memory_order_relaxed);
      runtime.counters->request_done(route_index, 499, elapsed_us(arrived));
      log_request(current_request_id, route.path, 499, elapsed_ms(arrived), "client closed the connection");
      return error_reply(499, "client_closed", current_request_id);
    }
    runtime.counters->request_done(route_index, 504, elapsed_us(arrived));
    log_request(current_request_id, route.path, 504, elapsed_ms(arrived), "coordinator missed the hard limit");
    return error_reply(504, "upstream_timeout", current_request_id);
  }

  static std::chrono::microseconds elapsed_us(clock::time_point since) {
    return std::chrono::duration_cast<std::chrono::microseconds>(clock::now() - since);
  }

  static std::int64_t elapsed_ms(clock::time_point since) {
    return std::chrono::duration_cast<millis>(clock::now() - since).count();
  }
};

http_front::http_front(const config& cfg, gateway_stats& stats, caf::actor_system& system,
                       section_runtime runtime)
  : impl_(std::make_unique<impl>(cfg, stats, system, runtime)) {
}

http_front::~http_front() {
  stop();
}

int http_front::bind(const std::string& host, int port) {
  auto& server = impl_->server;
  int bound = port == 0 ? server.bind_to_any_port(host) : (server.bind_to_port(host, port) ? port : -1);
  if (bound < 0)
    throw std::runtime_error("cannot listen on " + host + ":" + std::to_string(port));
  // httplib listens with a backlog of 5, which overflows on bursts (1 s SYN retransmit tails).
  ::listen(server.listen_fd(), SOMAXCONN);
  // The handler threads start here, before "listening on" is printed, so that a system that
  // cannot run them is a start-up error, not a crash in httplib's listen thread.
  const auto threads = impl_->cfg.max_inflight + reserve_handler_threads;
  try {
    impl_->pool = std::make_unique<handler_pool>(threads);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string{e.what()} + "; they are max_inflight + " +
                             std::to_string(reserve_handler_threads) +
                             ": lower max_inflight or raise the system's thread limits");
  }
  // httplib asks once per listen and owns what it gets (it shuts the pool down when it stops).
  server.new_task_queue = [owner = impl_.get()]() -> httplib::TaskQueue* { return owner->pool.release(); };
  return bound;
}

void http_front::run() {
  impl_->server.listen_after_bind();
}

bool http_front::running() const {
  return impl_->server.is_running();
}

void http_front::stop() {
  if (impl_->server.is_running())
    impl_->server.stop();
}

} // namespace gather
