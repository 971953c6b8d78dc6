// One loop's face of the downstream client (loop_client.hpp), and the collector that serves a
// transfer with `http2` from an HTTP/2 call's events.
#include "call/loop_client.hpp"

namespace gather::downstream_loop {

namespace {

/// A transfer's result from an HTTP/2 call: the head's status, the DATA gathered (the client
/// bounds it by max_response_bytes), the end mapped to the transfer's errors as HTTP/1.1 reports
/// them; an origin without h2 sends the transfer to the HTTP/1.1 client.
class transfer_collector final : public stream_events {
public:
  transfer_collector(loop_client& face, std::uint64_t id, transfer_request request, downstream_client::completion done,
                     inflight_ticket ticket)
    : face_(face), id_(id), request_(std::move(request)), done_(std::move(done)), ticket_(std::move(ticket)),
      started_(std::chrono::steady_clock::now()) {}

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
    if (end.how != stream_ending::no_h2)
      ticket_.release(); // before the completion: whoever it wakes sees the count without it
    switch (end.how) {
      case stream_ending::complete:
        result_.body.reserve(result_.body.size() + body_slack_bytes);
        return done(std::move(result_));
      case stream_ending::no_h2: {
        const auto spent = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started_);
        request_.timeout = std::max(std::chrono::milliseconds{1}, request_.timeout - spent);
        request_.slow_after = std::chrono::microseconds{0}; // its point has passed or is lost: no hedge
        return face_.fall_back(id_, std::move(request_), std::move(done), std::move(ticket_));
      }
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
  loop_client& face_;
  std::uint64_t id_;
  transfer_request request_;
  downstream_client::completion done_;
  inflight_ticket ticket_; ///< the transfer's, not its HTTP/2 call's: it goes on with a fall-back
  std::chrono::steady_clock::time_point started_;
  transfer_result result_;
};

/// The HTTP/2 form of a transfer's request.
stream_request stream_form(const transfer_request& request) {
  stream_request out;
  out.url = request.url;
  out.method = request.method;
  out.headers = header_fields(request.header_lines);
  out.body = request.body;
  out.timeout = request.timeout;
  out.max_response_bytes = request.max_body_bytes;
  out.slow_after = request.slow_after;
  out.slow = request.slow;
  out.target = request.target;
  return out;
}

} // namespace

loop_client::loop_client(asio::io_context& loop, name_lookups& lookups, asio::ssl::context& tls,
                         asio::ssl::context& tls_h2, const link_bounds& bounds)
  : loop_(loop), protocols_(bounds.alpn_memory), h1_(loop, lookups, tls, bounds),
    h2_(loop, lookups, tls_h2, bounds, [this](std::unique_ptr<origin_connection> conn) {
      protocols_.chose(conn->key, origin_protocol::h1, std::chrono::steady_clock::now());
      h1_.give_back(std::move(conn));
    }) {}

bool loop_client::speaks_http1_only(const transfer_request& request) {
  if (protocols_.empty())
    return false;
  auto where = split_url(request.url, request.target);
  return where && protocols_.of(where->key, std::chrono::steady_clock::now()) == origin_protocol::h1;
}

void loop_client::start(std::uint64_t id, transfer_request&& request, downstream_client::completion&& done,
                        inflight_ticket ticket) {
  if (!request.http2 || speaks_http1_only(request))
    return h1_.start(id, std::move(request), std::move(done), std::move(ticket));
  auto call = stream_form(request);
  auto collector = std::make_shared<transfer_collector>(*this, id, std::move(request), std::move(done), std::move(ticket));
  h2_.start(id, std::move(call), std::move(collector), inflight_ticket{});
}

void loop_client::fall_back(std::uint64_t id, transfer_request request, downstream_client::completion done,
                            inflight_ticket ticket) {
  h1_.start(id, std::move(request), std::move(done), std::move(ticket));
}

} // namespace gather::downstream_loop
