// The HTTP/2 client of one event loop (h2_client.hpp): which link a call goes on, its timer, its
// one end. A link per origin at rest: another opens when no link of the origin takes a stream
// (each busy at the server's MAX_CONCURRENT_STREAMS, reset streams not yet freed counted, or
// draining), and a link left without calls closes when its origin has another that takes calls,
// or after downstream_idle_timeout_ms.
#include "h2/h2_client.hpp"

#include <algorithm>
#include <cctype>

#include <boost/asio/post.hpp>

#include "gather/downstream/call/header_names.hpp"

#include "gather/downstream/call/call_deadlines.hpp"
#include "pool/retire_epoch.hpp"

namespace gather::downstream_loop {

h2_client::~h2_client() {
  for (auto& [id, call] : running_) {
    call->finished = true;
    call->ticket.release();
    call->events.reset(); // a transfer's collector, and the ticket it holds, go now
  }
  running_.clear();
  // Out of the pool first: a closing link's observer finds nothing to move, and no origin is
  // forgotten while the pool is walked.
  std::vector<std::shared_ptr<h2_link>> links;
  pool_.each([&](const std::string&, downstream_pool::origin& origin) {
    origin.h2.each([&](auto& link) { links.push_back(std::move(link)); });
    origin.h2 = {};
  });
  for (auto& link : links)
    link->close_now();
}

void h2_client::start(std::uint64_t id, stream_request request, std::shared_ptr<stream_events> events,
                      inflight_ticket ticket) {
  if (retire_epoch().load(std::memory_order_relaxed) != retire_seen_)
    drain_retired();
  auto call = std::make_shared<h2_call>();
  call->id = id;
  call->events = std::move(events);
  call->ticket = std::move(ticket);
  auto where = split_url(request.url, request.target);
  call->request = std::move(request);
  running_.emplace(id, call);
  if (!where)
    return fail_now(call, stream_ending::protocol, "not an http or https URL");
  if (where->origin->endpoint && where->origin->endpoint->address.empty())
    return fail_now(call, stream_ending::connection, where->origin->endpoint->detail);
  for (const auto& [name, value] : call->request.headers) {
    const bool upper = std::any_of(name.begin(), name.end(), [](char c) { return std::isupper(static_cast<unsigned char>(c)); });
    if (name.empty() || name[0] == ':' || upper || is_connection_specific(name))
      return fail_now(call, stream_ending::protocol, "header name not allowed in HTTP/2: " + name);
  }
  call->where = std::move(*where);
  arm(call);
  place(call, nullptr);
}

void h2_client::drain_retired() {
  retire_seen_ = retire_epoch().load(std::memory_order_relaxed);
  std::vector<std::shared_ptr<h2_link>> retired;
  pool_.each([&](const std::string&, downstream_pool::origin& origin) {
    origin.h2.each([&](auto& link) {
      if (const auto& endpoint = link->where().origin->endpoint; endpoint && endpoint->retired.load(std::memory_order_relaxed))
        retired.push_back(link);
    });
  });
  for (auto& link : retired) // (each retire moves the link between lists: not while walking them)
    link->retire("its endpoint left the upstream");
}

void h2_client::fail_now(const std::shared_ptr<h2_call>& call, stream_ending how, std::string detail) {
  // Posted: start() may run inside call(), and no event runs before call() returns.
  asio::post(loop_, [this, call, how, detail = std::move(detail)]() mutable {
    end(call, {how, 0, std::move(detail)});
  });
}

void h2_client::arm(const std::shared_ptr<h2_call>& call) {
  const auto timeout = std::chrono::microseconds{std::max(call->request.timeout, std::chrono::milliseconds{1})};
  arm_call(deadlines_, *call, timeout, call->request.slow_after, std::move(call->request.slow));
}

void h2_client::came_due(std::uint64_t id, call_deadlines::step what) {
  const auto it = running_.find(id);
  if (it == running_.end())
    return;
  const auto call = it->second; // held: its end takes it out of running_
  downstream_loop::came_due(deadlines_, *call, what, [&] {
    // A server that never sent its SETTINGS is not speaking HTTP/2: the next call gets a new link.
    auto* link = call->link;
    const bool silent = link && !link->heard_from_server();
    end(call, {stream_ending::timeout, 0, "the call's timeout passed"});
    if (silent && !link->closed())
      link->shut("no SETTINGS from " + call->where.origin->key + " within a call's timeout");
  });
}

void h2_client::place(const std::shared_ptr<h2_call>& call, const h2_link* exclude) {
  auto& origin = pool_.at(call->where.origin->key).h2;
  for (const auto state : {link_state::ready, link_state::connecting}) {
    const auto list = origin[state]; // a copy: add() may move the link to another list
    for (auto& link : list)
      if (link.get() != exclude && link->has_room() && link->add(call))
        return;
  }
  if (call->where.origin->tls && pool_.speaks_h1(call->where.origin->key, link_machine::clock::now()))
    return fail_now(call, stream_ending::connection,
                    call->where.origin->key + " chose HTTP/1.1 by ALPN (remembered for downstream_alpn_memory_ms): no h2");
  auto link = std::make_shared<h2_link>(*this, loop_, tls_, call->where, pool_.bounds().links);
  pool_.at(call->where.origin->key).h2.add(link_state::connecting, link); // (a link that closed above may have taken `origin`)
  if (!link->add(call))
    return end(call, {stream_ending::protocol, 0, "the HTTP/2 session refused the request"});
  link->open(lookups_);
}

void h2_client::adopt(std::unique_ptr<origin_connection> conn, const origin_and_target& where) {
  auto link = std::make_shared<h2_link>(*this, loop_, tls_, where, pool_.bounds().links);
  pool_.at(where.origin->key).h2.add(link_state::connecting, link);
  link->adopt(std::move(conn));
}

void h2_client::abandon(std::uint64_t id) {
  auto it = running_.find(id);
  if (it == running_.end())
    return;
  auto call = it->second;
  running_.erase(it);
  call->ticket.release();
  call->finished = true;
  disarm_call(deadlines_, *call);
  if (call->link)
    call->link->release(*call); // RST_STREAM CANCEL
  call->events.reset();
}

void h2_client::end(const std::shared_ptr<h2_call>& call, stream_end&& how) {
  if (call->finished)
    return;
  call->finished = true;
  disarm_call(deadlines_, *call);
  running_.erase(call->id);
  call->ticket.release(); // before on_end: whoever it wakes sees the count without it
  if (call->link)
    call->link->release(*call); // a stream still open is reset (CANCEL)
  auto events = std::move(call->events);
  events->on_end(std::move(how));
}

void h2_client::refused(const std::shared_ptr<h2_call>& call, const h2_link* from, std::string why) {
  if (call->finished)
    return;
  if (++call->resends > max_resends)
    return end(call, {stream_ending::refused, h2_code::refused_stream,
                      "refused by " + call->where.origin->key + " " + std::to_string(call->resends) + " times (" + why + ")"});
  // A fresh call on the stream's side: nothing of the refused one reached the events.
  call->head = stream_head{};
  call->trailers.clear();
  call->head_bytes = call->received = 0;
  call->remote_reset = false;
  place(call, from);
}

void h2_client::moved(h2_link& link, link_state from, link_state to) {
  const auto& key = link.where().origin->key;
  auto* origin = pool_.find(key);
  if (!origin)
    return;
  const auto gone = origin->h2.move(&link, from, to); // held until the origin is forgotten
  if (to == link_state::closed)
    pool_.forget_if_empty(key, link_machine::clock::now());
}

void h2_client::idle(h2_link& link) {
  auto keep = link.shared_from_this();
  asio::post(loop_, [this, keep] { // not inside the session's callbacks
    if (keep->machine().in_use() != 0 || keep->state() != link_state::ready)
      return;
    // Kept while it is the only ready link of its origin (and its endpoint has not left its
    // upstream); else closed (GOAWAY).
    const auto& endpoint = keep->where().origin->endpoint;
    if (endpoint && endpoint->retired.load(std::memory_order_relaxed))
      return keep->shut("its endpoint left the upstream");
    const auto* origin = pool_.find(keep->where().origin->key);
    if (!origin)
      return;
    const auto& ready = origin->h2[link_state::ready];
    if (std::none_of(ready.begin(), ready.end(), [&](const auto& l) { return l != keep; }))
      return;
    keep->shut("no calls left on a further connection");
  });
}

header_list header_fields(const std::string& header_lines) {
  header_list out;
  std::size_t at = 0;
  while (at < header_lines.size()) {
    auto end = header_lines.find("\r\n", at);
    if (end == std::string::npos)
      end = header_lines.size();
    const auto line = std::string_view(header_lines).substr(at, end - at);
    at = end + 2;
    const auto colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0)
      continue;
    std::string name(line.substr(0, colon));
    for (auto& c : name)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (is_connection_specific(name))
      continue;
    auto value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
      value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t'))
      value.remove_suffix(1);
    out.emplace_back(std::move(name), std::string(value));
  }
  return out;
}

} // namespace gather::downstream_loop
