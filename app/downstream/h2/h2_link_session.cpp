// One HTTP/2 connection's streams (h2_link.hpp): the client codec's events turned into each call's
// events (the call is its stream's data in the codec), and the streams it opens. h2_link.cpp is the
// transport under it (connect, TLS, reads and writes).
//
// Flow control: the codec opens the windows again as DATA is received, and every chunk goes to its
// call's events as it is read (nothing of a stream is kept here), so what a call buffers is what
// its consumer keeps, bounded by max_response_bytes (the call ends past it).
#include "h2/h2_link.hpp"

#include <algorithm>
#include <cstring>

#include "gather/downstream/h1/response_reading.hpp"
#include "gather/values/h2_codes.hpp"

#include "h2/h2_client.hpp"

namespace gather::downstream_loop {

namespace {

/// The stream window the client offers (SETTINGS_INITIAL_WINDOW_SIZE) and the connection's.
constexpr std::int32_t stream_window_bytes = 1 << 20;
constexpr std::int32_t connection_window_bytes = 16 << 20;

h2_call* call_of(void* data) { return static_cast<h2_call*>(data); }

} // namespace

std::unique_ptr<http2::h2_codec> h2_link::new_codec() {
  http2::h2_settings settings;
  settings.initial_window_bytes = stream_window_bytes;
  settings.max_header_list_bytes = max_response_head_bytes;
  settings.connection_window_bytes = connection_window_bytes;
  http2::h2_codec_events& events = *this;
  return std::make_unique<http2::h2_codec>(http2::h2_role::client, settings, events);
}

// ---- the codec's events ----------------------------------------------------------------------------

void h2_link::frame_received(http2::h2_frame, std::int32_t, bool) {
  machine_.frame(link_machine::clock::now());
}

void h2_link::header(std::int32_t, void* data, http2::h2_block, std::string_view name, std::string_view value) {
  auto* call = call_of(data);
  if (!call)
    return;
  call->head_bytes += name.size() + value.size() + 32; // RFC 7541 4.1
  if (!head_within_cap(call->head_bytes)) {
    auto held = call->shared_from_this();
    release(*call);
    owner_.end(held, {stream_ending::protocol, 0, "response header block over its cap"});
    return;
  }
  if (call->got_head) {
    call->trailers.emplace_back(name, value);
    return;
  }
  if (name == ":status") {
    call->head.status = 0;
    if (value.size() == 3 && std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; }))
      call->head.status = (value[0] - '0') * 100 + (value[1] - '0') * 10 + (value[2] - '0');
    return;
  }
  call->head.headers.emplace_back(name, value);
}

void h2_link::headers_end(std::int32_t, void* data, http2::h2_block, bool ends) {
  auto* call = call_of(data);
  if (!call)
    return;
  auto held = call->shared_from_this(); // the consumer's events may end the call
  if (call->got_head) {
    auto trailers = std::move(call->trailers);
    call->events->on_trailers(std::move(trailers));
    return;
  }
  if (call->head.status >= 100 && call->head.status < 200 && !ends) { // informational: the next
    call->head = stream_head{};
    return;
  }
  if (call->head.status < 200) {
    release(*call);
    return owner_.end(held, {stream_ending::protocol, 0, "a response without a valid :status"});
  }
  call->got_head = true;
  call->head.ends_stream = ends;
  auto head = std::move(call->head);
  if (!call->events->on_head(std::move(head)) && !call->finished) {
    release(*call);
    owner_.end(held, {stream_ending::stopped, 0, "the consumer stopped at the head"});
  }
}

void h2_link::data(std::int32_t, void* data, std::string_view bytes) {
  auto* call = call_of(data);
  if (!call)
    return;
  auto held = call->shared_from_this();
  call->received += bytes.size();
  if (call->received > call->request.max_response_bytes) {
    release(*call);
    owner_.end(held, {stream_ending::too_large, 0, "the body exceeded max_response_bytes"});
    return;
  }
  if (!call->events->on_data(bytes) && !call->finished) {
    release(*call);
    owner_.end(held, {stream_ending::stopped, 0, "the consumer stopped"});
  }
}

void h2_link::reset(std::int32_t, void* data, std::uint32_t) {
  if (auto* call = call_of(data))
    call->remote_reset = true;
}

void h2_link::settings(std::uint32_t max_concurrent_streams) {
  const bool first = state() == link_state::connecting;
  machine_.settings(max_concurrent_streams, link_machine::clock::now());
  if (first)
    send_waiting();
}

void h2_link::goaway(std::int32_t last_stream, std::uint32_t code, std::string_view) {
  goaway_code_ = code;
  machine_.goaway(last_stream, link_machine::clock::now());
}

void h2_link::stream_closed(std::int32_t stream_id, void* data, std::uint32_t code) {
  auto* raw = call_of(data);
  if (!raw)
    return; // released: its call has gone on
  auto call = drop(*raw);
  machine_.ended(stream_id, link_machine::clock::now());
  call->link = nullptr;
  call->stream_id = 0;
  const bool refused = code == h2_code::refused_stream && !call->got_head;
  if (refused) // by RST_STREAM, or above a GOAWAY's last stream id (the codec closes those so)
    owner_.refused(call, this, call->remote_reset ? "REFUSED_STREAM" : "above GOAWAY's last stream id");
  else if (call->remote_reset)
    owner_.end(call, {stream_ending::reset, code, "the server reset the stream"});
  else if (code == h2_code::no_error && call->got_head)
    owner_.end(call, {stream_ending::complete, 0, {}});
  else if (code == h2_code::no_error)
    owner_.end(call, {stream_ending::protocol, 0, "the stream ended without a response"});
  else // the codec reset it: a malformed answer (nghttp2 checks the messaging rules)
    owner_.end(call, {stream_ending::protocol, code, "malformed response (reset by the client)"});
  maybe_idle();
}

void h2_link::request_not_sent(std::int32_t stream_id, bool refused, const char* why) {
  // The stream never opened, so it has no data in the codec: the call is found by its id (rare).
  auto at = std::find_if(carried_.begin(), carried_.end(), [&](const auto& c) { return c->stream_id == stream_id; });
  if (at == carried_.end())
    return;
  auto call = drop(**at);
  machine_.ended(stream_id, link_machine::clock::now());
  call->link = nullptr;
  call->stream_id = 0;
  if (refused)
    owner_.refused(call, this, why);
  else
    owner_.end(call, {stream_ending::protocol, 0, std::string{"request not sent: "} + why});
}

long h2_link::body_bytes(std::int32_t, void* data, std::uint8_t* out, std::size_t room, http2::h2_body_end& end) {
  auto* call = call_of(data);
  end = http2::h2_body_end::last;
  if (!call)
    return 0;
  const auto& body = call->request.body;
  const std::size_t n = std::min(room, body.size() - call->body_sent);
  std::memcpy(out, body.data() + call->body_sent, n);
  call->body_sent += n;
  if (call->body_sent != body.size())
    end = http2::h2_body_end::more;
  return static_cast<long>(n);
}

// ---- the streams it opens ------------------------------------------------------------------------

bool h2_link::add(const std::shared_ptr<h2_call>& call) {
  if (heard_from_server())
    return submit(call);
  call->link = this;
  call->stream_id = 0;
  waiting_.push_back(call);
  machine_.wait_added();
  return true;
}

void h2_link::send_waiting() {
  auto waiting = std::move(waiting_);
  waiting_.clear();
  for (auto& call : waiting) {
    if (call->finished || call->link != this)
      continue;
    call->link = nullptr;
    machine_.wait_removed(link_machine::clock::now());
    if (!machine_.takes_stream() && call->moves < max_moves) {
      ++call->moves;
      owner_.move(call, this);
    } else if (!submit(call)) {
      owner_.end(call, {stream_ending::protocol, 0, "the HTTP/2 session refused the request"});
    }
  }
}

bool h2_link::submit(const std::shared_ptr<h2_call>& call) {
  const auto& where = call->where;
  const auto& req = call->request;
  fields_.clear();
  fields_.push_back({":method", req.method});
  fields_.push_back({":scheme", where.origin->tls ? "https" : "http"});
  fields_.push_back({":authority", where.origin->host_header});
  fields_.push_back({":path", where.target});
  for (const auto& [name, value] : req.headers)
    fields_.push_back({name, value});
  const bool no_body = req.body.empty() && (req.method == "GET" || req.method == "HEAD");
  call->body_sent = 0;
  const std::int32_t id = codec_->submit_request(fields_, !no_body, call.get());
  if (id < 0)
    return false;
  call->link = this;
  call->stream_id = id;
  call->carried_at = carried_.size();
  carried_.push_back(call);
  machine_.opened(id);
  flush();
  return true;
}

std::shared_ptr<h2_call> h2_link::drop(h2_call& call) {
  const auto at = call.carried_at;
  auto held = std::move(carried_[at]);
  if (at + 1 != carried_.size()) {
    carried_[at] = std::move(carried_.back());
    carried_[at]->carried_at = at;
  }
  carried_.pop_back();
  return held;
}

void h2_link::release(h2_call& call) {
  if (call.link != this)
    return;
  if (call.stream_id == 0) {
    waiting_.erase(std::remove_if(waiting_.begin(), waiting_.end(), [&](const auto& c) { return c.get() == &call; }),
                   waiting_.end());
    machine_.wait_removed(link_machine::clock::now());
  }
  std::shared_ptr<h2_call> held;
  if (call.stream_id != 0) {
    held = drop(call); // (kept until the call's fields are cleared below)
    codec_->detach(call.stream_id);
    if (!closed()) {
      codec_->reset(call.stream_id, h2_code::cancel);
      machine_.reset(call.stream_id, link_machine::clock::now()); // its slot is held (link_machine.hpp)
    }
  }
  call.link = nullptr;
  call.stream_id = 0;
  flush();
  if (closed())
    return;
  rearm();
  maybe_idle();
}

} // namespace gather::downstream_loop
