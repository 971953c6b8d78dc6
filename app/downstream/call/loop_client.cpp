// One loop's face of the downstream client (loop_client.hpp), and the collector that serves a
// transfer with `http2` from an HTTP/2 call's events.
#include "call/loop_client.hpp"

#include <strings.h>

namespace gather::downstream_loop {

namespace {

/// A transfer's result from an HTTP/2 call: the head's status, the DATA gathered (the client
/// bounds it by max_response_bytes), the end mapped to the transfer's errors as HTTP/1.1 reports
/// them.
class transfer_collector final : public stream_events {
public:
  transfer_collector(downstream_client::completion done, inflight_ticket ticket)
    : done_(std::move(done)), ticket_(std::move(ticket)) {}

  bool on_head(stream_head&& head) override {
    result_.http_status = head.status;
    return true;
  }
  bool on_data(std::string_view chunk) override {
    result_.body.append(chunk);
    return true;
  }
  void on_trailers(header_list&&) override {}
  void on_end(stream_end&& end) override {
    auto done = std::move(done_);
    ticket_.release(); // before the completion: whoever it wakes sees the count without it
    switch (end.how) {
      case stream_ending::complete:
        result_.body.reserve(result_.body.size() + body_slack_bytes);
        return done(std::move(result_));
      case stream_ending::timeout:
        result_.error = transfer_error::timeout;
        break;
      case stream_ending::too_large:
        result_.error = transfer_error::too_large;
        break;
      case stream_ending::protocol:
      case stream_ending::stopped:
        result_.error = transfer_error::protocol;
        break;
      case stream_ending::reset:
      case stream_ending::refused:
      case stream_ending::connection:
        result_.error = transfer_error::connect;
        break;
    }
    result_.body.clear();
    result_.detail = std::move(end.detail);
    if (end.reset_code != 0)
      result_.detail += " (HTTP/2 error " + std::to_string(end.reset_code) + ")";
    done(std::move(result_));
  }

private:
  downstream_client::completion done_;
  inflight_ticket ticket_; ///< the transfer's, not its HTTP/2 call's
  transfer_result result_;
};

/// The HTTP/2 form of a transfer's request, which it takes over (the header lines become fields).
stream_request stream_form(transfer_request&& request) {
  stream_request out;
  out.url = std::move(request.url);
  out.method = std::move(request.method);
  out.headers = header_fields(request.header_lines);
  out.body = std::move(request.body);
  out.timeout = request.timeout;
  out.max_response_bytes = request.max_body_bytes;
  out.slow_after = request.slow_after;
  out.slow = std::move(request.slow);
  out.target = std::move(request.target);
  return out;
}

} // namespace

loop_client::loop_client(asio::io_context& loop, name_lookups& lookups, asio::ssl::context& tls,
                         asio::ssl::context& tls_h2, const pool_bounds& bounds)
  : loop_(loop), pool_(bounds), h1_(loop, lookups, tls, tls_h2, pool_, *this), h2_(loop, lookups, tls_h2, pool_) {}

void loop_client::start(std::uint64_t id, transfer_request&& request, downstream_client::completion&& done,
                        inflight_ticket ticket) {
  if (!request.http2)
    return h1_.start(id, std::move(request), std::move(done), std::move(ticket));
  // h2c (prior knowledge) asks nothing of the origin: only https has an ALPN answer to wait for.
  if (request.url.size() < 6 || ::strncasecmp(request.url.c_str(), "https:", 6) != 0)
    return start_h2(id, std::move(request), std::move(done), std::move(ticket));
  const auto where = split_url(request.url, request.target, request.origin.get());
  if (!where || !where->origin->tls || h2_.takes_call(where->origin->key)) // a link with room (or a URL h2_client refuses)
    return start_h2(id, std::move(request), std::move(done), std::move(ticket));
  // https and a new connection needed: http/1.1 remembered, or one whose ALPN decides.
  const bool h1 = pool_.speaks_h1(where->origin->key, std::chrono::steady_clock::now());
  h1_.start(id, std::move(request), std::move(done), std::move(ticket), !h1);
}

void loop_client::start_h2(std::uint64_t id, transfer_request&& request, downstream_client::completion&& done,
                           inflight_ticket ticket) {
  auto call = stream_form(std::move(request));
  h2_.start(id, std::move(call), std::make_shared<transfer_collector>(std::move(done), std::move(ticket)),
            inflight_ticket{});
}

void loop_client::chose_h2(std::unique_ptr<origin_connection> conn, const origin_and_target& where,
                           std::vector<h2_bound> transfers) {
  h2_.adopt(std::move(conn), where);
  for (auto& t : transfers)
    start_h2(t.id, std::move(t.request), std::move(t.done), std::move(t.ticket));
}

} // namespace gather::downstream_loop
