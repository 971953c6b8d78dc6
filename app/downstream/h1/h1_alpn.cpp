// An `http2` transfer to an https origin whose protocol the pool does not know yet (h1_client.hpp's
// alpn_offer): ALPN's choice is made on a connection this client makes, and the transfer stays a
// transfer until it is known. One probe per origin at a time; the transfers that come meanwhile
// wait for its answer. http/1.1 (or no ALPN): the probe's transfer is sent on its connection and
// the waiting ones go on connections of their own, one request each. h2: the connection and every
// transfer that waited go to the HTTP/2 side together (alpn_choice::chose_h2), none ended and
// started again, none counted twice.
#include "h1/h1_client.hpp"

#include <algorithm>
#include <cstring>
#include <functional>
#include <utility>

#include "gather/downstream/call/call_deadlines.hpp"

namespace gather::downstream_loop {

void h1_client::start_offering(const std::shared_ptr<transfer>& t, transfer_request&& request,
                               std::chrono::microseconds timeout) {
  // The hedge runs once, from this timer or from the HTTP/2 call's, whichever reaches it first.
  std::function<void()> slow;
  if (request.slow) {
    auto once = std::make_shared<std::function<void()>>(std::move(request.slow));
    slow = [once] {
      if (auto run = std::exchange(*once, std::function<void()>{}))
        run();
    };
  }
  request.slow = slow;
  arm_call(deadlines_, *t, timeout, request.slow_after, std::move(slow));
  t->offer = std::make_unique<alpn_offer>();
  t->offer->request = std::move(request);
  t->offer->started = std::chrono::steady_clock::now();
  if (!pool_.join_probe(t->where.origin->key, t))
    return; // it waits for the probe in flight
  t->offer->probing = true;
  connect(t);
}

void h1_client::probe_lost(const std::string& key) {
  for (auto& t : pool_.end_probe(key)) {
    if (t->finished || !pool_.join_probe(key, t))
      continue; // gone, or waiting for the probe the first live one makes
    t->offer->probing = true;
    connect(t);
  }
}

void h1_client::alpn_answered(const std::shared_ptr<transfer>& t) {
  const unsigned char* chosen = nullptr;
  unsigned int size = 0;
  SSL_get0_alpn_selected(t->conn->tls_stream->native_handle(), &chosen, &size);
  const auto& key = t->where.origin->key;
  auto waiting = pool_.end_probe(key);
  t->offer->probing = false;
  if (size == 2 && std::memcmp(chosen, "h2", 2) == 0) {
    std::vector<alpn_choice::h2_bound> calls;
    const auto now = std::chrono::steady_clock::now();
    const auto as_call = [&](const std::shared_ptr<transfer>& w) {
      if (w->finished)
        return;
      w->finished = true; // out of this client, with nothing told: it goes on as an HTTP/2 call
      disarm_call(deadlines_, *w);
      running_.erase(w->id);
      auto& request = w->offer->request;
      const auto spent = std::chrono::duration_cast<std::chrono::microseconds>(now - w->offer->started);
      request.timeout = std::max(std::chrono::milliseconds{1},
                                 request.timeout - std::chrono::duration_cast<std::chrono::milliseconds>(spent));
      request.slow_after = request.slow_after > spent ? request.slow_after - spent : std::chrono::microseconds{0};
      calls.push_back({w->id, std::move(request), std::move(w->done), std::move(w->ticket)});
    };
    as_call(t);
    for (const auto& w : waiting)
      as_call(w);
    auto where = t->where;
    return choice_.chose_h2(std::move(t->conn), where, std::move(calls));
  }
  pool_.chose_h1(key, std::chrono::steady_clock::now());
  t->offer.reset();
  for (const auto& w : waiting) {
    if (w->finished)
      continue;
    w->offer.reset();
    reuse_or_connect(w);
  }
  send(t);
}

} // namespace gather::downstream_loop
