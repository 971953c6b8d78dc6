// One HTTP/2 connection's session (h2_link.hpp): the nghttp2 client session, its callbacks, which
// turn frames into each call's events, and the streams it opens. h2_link.cpp is the transport
// under it (connect, TLS, reads and writes).
//
// Flow control: nghttp2 opens the windows again as DATA is received, and every chunk goes to its
// call's events as it is read (nothing of a stream is kept here), so what a call buffers is what
// its consumer keeps, bounded by max_response_bytes (the call ends past it).
#include "h2/h2_link.hpp"

#include <algorithm>
#include <cstring>

#include <nghttp2/nghttp2.h>

#include "gather/downstream/h1/response_reading.hpp"

#include "h2/h2_client.hpp"

namespace gather::downstream_loop {

namespace {

/// The stream window the client offers (SETTINGS_INITIAL_WINDOW_SIZE) and the connection's.
constexpr std::int32_t stream_window_bytes = 1 << 20;
constexpr std::int32_t connection_window_bytes = 16 << 20;

bool is(const std::uint8_t* p, std::size_t n, const char* text) {
  return n == std::strlen(text) && std::memcmp(p, text, n) == 0;
}

} // namespace

/// nghttp2's C callbacks, each forwarding to the link (user_data) and the stream's call.
struct h2_link_callbacks {
  static h2_link& self(void* user_data) { return *static_cast<h2_link*>(user_data); }
  static std::shared_ptr<h2_call> call_of(h2_link& link, std::int32_t stream_id) {
    auto it = link.streams_.find(stream_id);
    return it == link.streams_.end() ? nullptr : it->second;
  }

  static int header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                    std::size_t name_size, const std::uint8_t* value, std::size_t value_size,
                    std::uint8_t, void* user_data) {
    auto& link = self(user_data);
    auto call = call_of(link, frame->hd.stream_id);
    if (!call || frame->hd.type != NGHTTP2_HEADERS)
      return 0;
    call->head_bytes += name_size + value_size + 32; // RFC 7541 4.1
    if (!head_within_cap(call->head_bytes)) {
      link.release(*call);
      link.owner_.end(call, {stream_ending::protocol, 0, "response header block over its cap"});
      return 0;
    }
    std::string v(reinterpret_cast<const char*>(value), value_size);
    if (!call->got_head) {
      if (is(name, name_size, ":status")) {
        call->head.status = 0;
        if (value_size == 3 && std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; }))
          call->head.status = std::stoi(v);
        return 0;
      }
      call->head.headers.emplace_back(std::string(reinterpret_cast<const char*>(name), name_size), std::move(v));
    } else {
      call->trailers.emplace_back(std::string(reinterpret_cast<const char*>(name), name_size), std::move(v));
    }
    return 0;
  }

  static void headers_done(h2_link& link, const std::shared_ptr<h2_call>& call, bool ends) {
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
      link.release(*call);
      return link.owner_.end(call, {stream_ending::protocol, 0, "a response without a valid :status"});
    }
    call->got_head = true;
    call->head.ends_stream = ends;
    auto head = std::move(call->head);
    if (!call->events->on_head(std::move(head)) && !call->finished) {
      link.release(*call);
      link.owner_.end(call, {stream_ending::stopped, 0, "the consumer stopped at the head"});
    }
  }

  static int frame_received(nghttp2_session* session, const nghttp2_frame* frame, void* user_data) {
    auto& link = self(user_data);
    const auto now = link_machine::clock::now();
    link.machine_.frame(now);
    switch (frame->hd.type) {
      case NGHTTP2_HEADERS:
        if (auto call = call_of(link, frame->hd.stream_id))
          headers_done(link, call, (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0);
        break;
      case NGHTTP2_RST_STREAM:
        if (auto call = call_of(link, frame->hd.stream_id))
          call->remote_reset = true;
        break;
      case NGHTTP2_SETTINGS:
        if ((frame->hd.flags & NGHTTP2_FLAG_ACK) == 0) {
          const bool first = link.state() == link_state::connecting;
          link.machine_.settings(nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS), now);
          if (first)
            link.send_waiting();
        }
        break;
      case NGHTTP2_GOAWAY:
        link.goaway_code_ = frame->goaway.error_code;
        link.machine_.goaway(frame->goaway.last_stream_id, now);
        break;
      default:
        break;
    }
    return 0;
  }

  static int data_chunk(nghttp2_session*, std::uint8_t, std::int32_t stream_id,
                        const std::uint8_t* data, std::size_t size, void* user_data) {
    auto& link = self(user_data);
    auto call = call_of(link, stream_id);
    if (!call)
      return 0;
    call->received += size;
    if (call->received > call->request.max_response_bytes) {
      link.release(*call);
      link.owner_.end(call, {stream_ending::too_large, 0, "the body exceeded max_response_bytes"});
      return 0;
    }
    if (!call->events->on_data({reinterpret_cast<const char*>(data), size}) && !call->finished) {
      link.release(*call);
      link.owner_.end(call, {stream_ending::stopped, 0, "the consumer stopped"});
    }
    return 0;
  }

  static int stream_closed(nghttp2_session*, std::int32_t stream_id, std::uint32_t code, void* user_data) {
    auto& link = self(user_data);
    auto call = call_of(link, stream_id);
    if (!call)
      return 0;
    link.streams_.erase(stream_id);
    link.machine_.ended(stream_id, link_machine::clock::now());
    call->link = nullptr;
    call->stream_id = 0;
    const bool refused = code == NGHTTP2_REFUSED_STREAM && !call->got_head;
    if (refused) // by RST_STREAM, or above a GOAWAY's last stream id (nghttp2 closes those so)
      link.owner_.refused(call, &link, call->remote_reset ? "REFUSED_STREAM" : "above GOAWAY's last stream id");
    else if (call->remote_reset)
      link.owner_.end(call, {stream_ending::reset, code, "the server reset the stream"});
    else if (code == NGHTTP2_NO_ERROR && call->got_head)
      link.owner_.end(call, {stream_ending::complete, 0, {}});
    else if (code == NGHTTP2_NO_ERROR)
      link.owner_.end(call, {stream_ending::protocol, 0, "the stream ended without a response"});
    else // the session reset it: a malformed answer (nghttp2 checks the messaging rules)
      link.owner_.end(call, {stream_ending::protocol, code, "malformed response (reset by the client)"});
    link.maybe_idle();
    return 0;
  }

  static int not_sent(nghttp2_session*, const nghttp2_frame* frame, int error, void* user_data) {
    auto& link = self(user_data);
    if (frame->hd.type != NGHTTP2_HEADERS)
      return 0;
    auto call = call_of(link, frame->hd.stream_id);
    if (!call)
      return 0;
    link.streams_.erase(frame->hd.stream_id);
    link.machine_.ended(frame->hd.stream_id, link_machine::clock::now());
    call->link = nullptr;
    call->stream_id = 0;
    if (error == NGHTTP2_ERR_START_STREAM_NOT_ALLOWED || error == NGHTTP2_ERR_STREAM_CLOSING)
      link.owner_.refused(call, &link, nghttp2_strerror(error));
    else
      link.owner_.end(call, {stream_ending::protocol, 0, std::string{"request not sent: "} + nghttp2_strerror(error)});
    return 0;
  }

  static ssize_t read_body(nghttp2_session*, std::int32_t stream_id, std::uint8_t* buf, std::size_t length,
                           std::uint32_t* flags, nghttp2_data_source*, void* user_data) {
    auto call = call_of(self(user_data), stream_id);
    if (!call) {
      *flags |= NGHTTP2_DATA_FLAG_EOF;
      return 0;
    }
    const auto& body = call->request.body;
    const std::size_t n = std::min(length, body.size() - call->body_sent);
    std::memcpy(buf, body.data() + call->body_sent, n);
    call->body_sent += n;
    if (call->body_sent == body.size())
      *flags |= NGHTTP2_DATA_FLAG_EOF;
    return static_cast<ssize_t>(n);
  }
};

nghttp2_session* h2_link::new_session() {
  nghttp2_session* session = nullptr;
  nghttp2_session_callbacks* callbacks = nullptr;
  nghttp2_session_callbacks_new(&callbacks);
  nghttp2_session_callbacks_set_on_header_callback(callbacks, h2_link_callbacks::header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, h2_link_callbacks::frame_received);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, h2_link_callbacks::data_chunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, h2_link_callbacks::stream_closed);
  nghttp2_session_callbacks_set_on_frame_not_send_callback(callbacks, h2_link_callbacks::not_sent);
  nghttp2_session_client_new(&session, callbacks, this);
  nghttp2_session_callbacks_del(callbacks);
  const nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
                                             {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, stream_window_bytes},
                                             {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, max_response_head_bytes}};
  nghttp2_submit_settings(session, NGHTTP2_FLAG_NONE, settings, sizeof settings / sizeof settings[0]);
  nghttp2_session_set_local_window_size(session, NGHTTP2_FLAG_NONE, 0, connection_window_bytes);
  return session;
}

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
  const std::string scheme = where.tls ? "https" : "http";
  std::vector<nghttp2_nv> nva;
  nva.reserve(4 + req.headers.size());
  auto field = [&nva](const std::string& name, const std::string& value) {
    nva.push_back({reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data())),
                   reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())), name.size(),
                   value.size(), NGHTTP2_NV_FLAG_NONE});
  };
  static const std::string method = ":method", scheme_name = ":scheme", authority = ":authority", path = ":path";
  field(method, req.method);
  field(scheme_name, scheme);
  field(authority, where.host_header);
  field(path, where.target);
  for (const auto& [name, value] : req.headers)
    field(name, value);
  nghttp2_data_provider body{};
  body.read_callback = h2_link_callbacks::read_body;
  const bool no_body = req.body.empty() && (req.method == "GET" || req.method == "HEAD");
  call->body_sent = 0;
  const std::int32_t id = nghttp2_submit_request(session_, nullptr, nva.data(), nva.size(), no_body ? nullptr : &body, nullptr);
  if (id < 0)
    return false;
  call->link = this;
  call->stream_id = id;
  streams_.emplace(id, call);
  machine_.opened(id);
  flush();
  return true;
}

void h2_link::release(h2_call& call) {
  if (call.link != this)
    return;
  if (call.stream_id == 0) {
    waiting_.erase(std::remove_if(waiting_.begin(), waiting_.end(), [&](const auto& c) { return c.get() == &call; }),
                   waiting_.end());
    machine_.wait_removed(link_machine::clock::now());
  }
  if (call.stream_id != 0) {
    streams_.erase(call.stream_id);
    if (!closed()) {
      nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, call.stream_id, NGHTTP2_CANCEL);
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
