// An HTTP/2 connection (h2_connection.hpp), its streams: what the session read (a stream opened,
// its header fields into a request_head within the inbound limits, its body, its end or reset),
// each stream's request through request_dispatch, and its answer (HEADERS, then DATA frames as
// nghttp2 asks for them under the stream's flow control).
#pragma once

#include <cctype>
#include <cstring>

#include "h2_connection.hpp"

namespace gather {

template <class Stream>
inline void* h2_connection<Stream>::stream_opened(std::int32_t id) {
  auto s = std::make_unique<h2_stream>(stream_.get_executor());
  shared_.serving.refresh(serving_); // each request takes the generation in force as it begins
  s->serving = serving_;
  s->head.version = 20;
  s->head.peer = s->head.client = peer_text_; // the client from its headers once they are read
  arm(id, *s, clock::now() + limits().request_timeout, why::incomplete);
  auto* record = s.get();
  streams_[id] = std::move(s);
  shared_.stats.h2_streams.fetch_add(1, std::memory_order_relaxed);
  return record;
}

template <class Stream>
inline void h2_connection<Stream>::header(std::int32_t, void* record, std::string_view name, std::string_view value) {
  auto* s = stream_of(record);
  if (!s || s->refusal != parse_refusal::none)
    return;
  if (!name.empty() && name.front() == ':') {
    if (name == ":method")
      s->head.method = value;
    else if (name == ":path")
      s->head.target = value;
    else if (name == ":authority")
      s->authority = value;
    if (s->head.target.size() > limits().max_request_line_bytes)
      s->refusal = parse_refusal::uri_too_long;
    return;
  }
  if (++s->fields > limits().max_headers) {
    s->refusal = parse_refusal::headers_too_large;
    return;
  }
  if (name == "cookie") // RFC 9113 8.2.3: split cookies are one header again
    for (auto& [have, joined] : s->head.headers)
      if (have == "cookie") {
        joined.append("; ").append(value);
        return;
      }
  s->head.headers.emplace_back(name, value);
}

template <class Stream>
inline void h2_connection<Stream>::header_list_too_large(std::int32_t, void* record) {
  if (auto* s = stream_of(record))
    s->refusal = parse_refusal::headers_too_large;
}

template <class Stream>
inline void h2_connection<Stream>::head_done(std::int32_t id, void* record, bool ends_stream) {
  auto* s = stream_of(record);
  if (!s || s->at != stage::head)
    return;
  if (!s->authority.empty() && !s->head.has_header("host"))
    s->head.headers.emplace_back("host", s->authority);
  s->request_id = request_id_for(s->head);
  if (s->refusal != parse_refusal::none)
    return refuse(id, *s);
  name_client(s->head, peer_, peer_text_, s->serving->cfg.trusted_proxies);
  s->dress = answer_dress(s->serving->cfg, s->head.header("origin"), s->head.header_list("accept-encoding"));
  if (!ends_stream && shared_.dispatch.may_read_body(*s->serving, s->head)) {
    s->admitting.emplace(*s->serving, s->head, s->request_id, shared_.stats);
    if (auto refused = shared_.dispatch.admit_head(*s->admitting, clock::now())) {
      s->admitting.reset(); // refused on the head: the body stays unread
      return answer(id, *s, std::move(*refused));
    }
    s->at = stage::body;
    return;
  }
  // No body, or one that is never read (dropped as it comes): served on the head.
  s->at = stage::ready;
  ready_.push_back(id);
}

template <class Stream>
inline void h2_connection<Stream>::body(std::int32_t id, void* record, std::string_view bytes) {
  auto* s = stream_of(record);
  if (!s || s->at != stage::body)
    return;
  if (s->body.size() + bytes.size() > s->serving->cfg.max_body_bytes) {
    s->refusal = parse_refusal::payload_too_large;
    return refuse(id, *s);
  }
  s->body.append(bytes);
}

template <class Stream>
inline void h2_connection<Stream>::body_done(std::int32_t id, void* record) {
  auto* s = stream_of(record);
  if (!s || s->at != stage::body)
    return;
  s->at = stage::ready;
  ready_.push_back(id);
}

template <class Stream>
inline void h2_connection<Stream>::stream_closed(std::int32_t id, void* record, std::uint32_t) {
  if (!record)
    return;
  const auto it = streams_.find(id); // its owner: the record leaves with it
  if (it == streams_.end())
    return;
  auto& s = *it->second;
  // Reset by the client (or the connection is ending) before its answer: as a hang-up in
  // HTTP/1.1, the request is given up and its coordinator stopped.
  give_up(s, true);
  s.timer.cancel();
  streams_.erase(it);
  shared_.stats.h2_streams.fetch_sub(1, std::memory_order_relaxed);
  if (streams_.empty()) {
    last_activity_ = clock::now();
    arm_connection_timer();
  }
}

template <class Stream>
inline long h2_connection<Stream>::answer_bytes(std::int32_t, void* record, std::uint8_t* out, std::size_t room, bool& last) {
  auto* s = stream_of(record);
  if (!s) {
    last = true;
    return 0;
  }
  const auto n = std::min(room, s->answer.size() - s->answer_sent);
  if (s->cut || (n == 0 && s->at == stage::streaming))
    return -1; // deferred: the next piece resumes the stream (a cut one waits for its RST_STREAM)
  std::memcpy(out, s->answer.data() + s->answer_sent, n);
  s->answer_sent += n;
  last = s->at != stage::streaming && s->answer_sent == s->answer.size();
  if (s->at == stage::streaming && s->answer_sent == s->answer.size()) {
    s->answer.clear(); // a progressive answer keeps only what is still to send
    s->answer_sent = 0;
  }
  return static_cast<long>(n);
}

template <class Stream>
inline void h2_connection<Stream>::serve(std::int32_t id, h2_stream& s) {
  s.at = stage::serving;
  s.arrived = clock::now();
  auto sink = std::make_shared<connection_sink>(stream_.get_executor(), this->weak_from_this(), id);
  if (!s.admitting) // else admitted on its head already: the route stays matched
    s.admitting.emplace(*s.serving, s.head, s.request_id, shared_.stats);
  auto result = shared_.dispatch.serve(s.serving, *s.admitting, std::move(s.body), s.arrived, sink);
  s.admitting.reset();
  if (auto* reply = std::get_if<http_reply>(&result))
    return answer(id, s, std::move(*reply));
  s.started = std::move(std::get<started_request>(result));
  s.sink = std::move(sink);
  arm(id, s, s.started->deadline, why::deadline);
}

template <class Stream>
inline void h2_connection<Stream>::refuse(std::int32_t id, h2_stream& s) {
  s.admitting.reset();
  answer(id, s, shared_.dispatch.refuse_unparsed(*s.serving, s.refusal, s.head, s.request_id, clock::now()));
}

template <class Stream>
inline void h2_connection<Stream>::answer(std::int32_t id, h2_stream& s, http_reply reply) {
  s.at = stage::answering;
  s.started.reset();
  s.sink.reset();
  s.dress.apply(reply);
  auto fields = fields_of(s, reply, true);
  if (s.head.method != "HEAD" && reply.status != 204)
    s.answer = std::move(reply.body);
  session_->respond(id, fields, !s.answer.empty());
  arm(id, s, clock::now() + limits().request_timeout, why::sending);
  flush();
}

template <class Stream>
inline std::vector<std::pair<std::string, std::string>>
h2_connection<Stream>::fields_of(const h2_stream& s, http_reply reply, bool whole) const {
  std::vector<std::pair<std::string, std::string>> fields;
  fields.reserve(4 + reply.headers.size());
  fields.emplace_back(":status", std::to_string(reply.status));
  fields.emplace_back("content-type", reply.content_type);
  if (whole && reply.status != 204)
    fields.emplace_back("content-length", std::to_string(reply.body.size()));
  fields.emplace_back("x-request-id", s.request_id);
  for (auto& [name, value] : reply.headers) {
    std::string lower = name;
    for (auto& c : lower)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    // RFC 9113 8.2.2: connection-specific fields have no place in HTTP/2.
    if (lower == "connection" || lower == "keep-alive" || lower == "transfer-encoding" ||
        lower == "upgrade" || lower == "proxy-connection")
      continue;
    fields.emplace_back(std::move(lower), std::move(value));
  }
  return fields;
}

template <class Stream>
inline void h2_connection<Stream>::give_up(h2_stream& s, bool client_left) {
  if (s.started && s.sink && s.sink->claim())
    shared_.dispatch.give_up(*s.started, s.sink->record(), client_left);
  else if (s.at == stage::streaming)
    stop_stream(s);
}

template <class Stream>
inline void h2_connection<Stream>::stop_stream(h2_stream& s) {
  if (s.started)
    shared_.dispatch.cancel(*s.started);
  s.at = stage::answering;
  s.cut = true;
  s.started.reset();
  s.sink.reset();
  s.encoder.reset();
}

} // namespace gather
