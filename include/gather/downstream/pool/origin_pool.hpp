// One event loop's downstream pool, without its sockets: per origin (its pool key, scheme://host:port
// with the host lower case, or an upstream endpoint's) the links of both protocols and what the
// origin's https server chose by ALPN, in one place, so that each rule is a unit test
// (tests/downstream/pool/origin_pool_test.cpp) and the two protocols' clients share one map.
//
//   origin_pool (one origin)
//     h2          HTTP/2 links, one list per link state (link_lists): moved by each link's
//                 machine's one observer (h2_client::moved), a closed one forgotten
//     h1_ready    HTTP/1.1 links at rest (ready, capacity 1), oldest first; one connecting or
//                 busy is its transfer's, whose handlers hold it, until the answer gives it back
//     probe       while an `http2` transfer's connection asks the https server by ALPN (h1_alpn.cpp):
//                 the transfers waiting for that answer
//     h1_until    the server chose http/1.1: `http2` transfers go over HTTP/1.1 without offering
//                 h2 until then (downstream_alpn_memory_ms)
//
// Who drives it (docs/architecture.md, the downstream row): loop_client owns the loop's pool;
// h1_client takes and gives back ready HTTP/1.1 links, runs the probe and sweeps the ready links
// by their machines' due(); h2_client places calls on the h2 lists and opens links there.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gather/downstream/pool/link_machine.hpp"

namespace gather {

/// One origin's links, one list per state but closed (a closed link is forgotten). `Link` is a
/// handle that owns or shares a link (std::shared_ptr, std::unique_ptr); the lists hold each link
/// once, in the list of its machine's state.
template <class Link>
class link_lists {
public:
  using list = std::vector<Link>;

  list& operator[](link_state state) { return lists_[index(state)]; }
  const list& operator[](link_state state) const { return lists_[index(state)]; }

  /// A link joins, in its machine's state (a new one: connecting). A closed one is not kept.
  void add(link_state state, Link link) {
    if (state != link_state::closed)
      (*this)[state].push_back(std::move(link));
  }
  /// The observer's move: the link at `which` leaves `from`'s list for `to`'s. The handle comes
  /// back when the link closed (the lists forget it; the caller lets it go when it is safe to);
  /// else an empty one. Nothing moves when `which` was not in `from`'s list.
  template <class Raw>
  Link move(const Raw* which, link_state from, link_state to) {
    if (from == link_state::closed)
      return Link{};
    auto& out = (*this)[from];
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (&*out[i] != which)
        continue;
      Link keep = std::move(out[i]);
      out.erase(out.begin() + static_cast<std::ptrdiff_t>(i));
      if (to == link_state::closed)
        return keep;
      (*this)[to].push_back(std::move(keep));
      return Link{};
    }
    return Link{};
  }

  bool empty() const {
    for (const auto& one : lists_)
      if (!one.empty())
        return false;
    return true;
  }
  std::size_t size() const {
    std::size_t n = 0;
    for (const auto& one : lists_)
      n += one.size();
    return n;
  }
  /// Every link, in state order (connecting, ready, busy, draining).
  template <class F>
  void each(F&& f) {
    for (auto& one : lists_)
      for (auto& link : one)
        f(link);
  }

private:
  static std::size_t index(link_state state) {
    // closed has no list: a caller that asks for it gets draining's, which it never uses (add and
    // move skip closed)
    return state == link_state::closed ? 3 : static_cast<std::size_t>(state);
  }
  std::array<list, 4> lists_; ///< connecting, ready, busy, draining
};

/// The bounds of one loop's pool (docs/config.md): its links' (an upstream's endpoints have their
/// own, call_target.hpp) and its own.
struct pool_bounds {
  link_bounds links;                            ///< downstream_idle_timeout_ms, downstream_drain_quiet_ms
  std::chrono::milliseconds alpn_memory{60000}; ///< downstream_alpn_memory_ms; 0: h2 offered every time
  std::size_t max_idle_h1 = 1024;               ///< downstream_max_idle_connections, all origins together
};

/// One origin's part of a loop's pool (the drawing above). `H1Link` owns an HTTP/1.1 connection,
/// `H2Link` shares an HTTP/2 link, `Waiter` shares a transfer waiting for an ALPN answer.
template <class H1Link, class H2Link, class Waiter>
struct origin_pool {
  using time_point = std::chrono::steady_clock::time_point;

  link_lists<H2Link> h2;
  std::vector<H1Link> h1_ready;
  /// A probe in flight (its transfer is not in here) and the transfers waiting for its answer.
  struct alpn_probe {
    std::vector<Waiter> waiting;
  };
  std::optional<alpn_probe> probe;
  std::optional<time_point> h1_until;

  /// Nothing left to keep the origin for at `now`.
  bool empty(time_point now) const {
    return h2.empty() && h1_ready.empty() && !probe && (!h1_until || *h1_until <= now);
  }
};

/// One loop's pool: its origins by pool key, and the rules that span them (the ready HTTP/1.1
/// links' bound, what ALPN's answers are remembered for).
template <class H1Link, class H2Link, class Waiter>
class loop_pool {
public:
  using origin = origin_pool<H1Link, H2Link, Waiter>;
  using time_point = typename origin::time_point;

  explicit loop_pool(const pool_bounds& bounds) : bounds_(bounds) {}

  const pool_bounds& bounds() const { return bounds_; }

  /// `key`'s part, made when new (a reference stays valid until forget_if_empty or sweep_h1
  /// drops that origin).
  origin& at(const std::string& key) { return origins_[key]; }
  origin* find(const std::string& key) {
    auto it = origins_.find(key);
    return it == origins_.end() ? nullptr : &it->second;
  }
  const origin* find(const std::string& key) const {
    auto it = origins_.find(key);
    return it == origins_.end() ? nullptr : &it->second;
  }
  /// `key`'s part goes when nothing is left in it.
  void forget_if_empty(const std::string& key, time_point now) {
    auto it = origins_.find(key);
    if (it != origins_.end() && it->second.empty(now))
      origins_.erase(it);
  }
  std::size_t origins() const { return origins_.size(); }

  // ---- ALPN ---------------------------------------------------------------------------------
  /// `key`'s server chose http/1.1 within the memory (an older answer is forgotten here).
  bool speaks_h1(const std::string& key, time_point now) {
    auto* o = find(key);
    if (!o || !o->h1_until)
      return false;
    if (now < *o->h1_until)
      return true;
    o->h1_until.reset(); // asked again from now on
    return false;
  }
  /// `key`'s server chose http/1.1 at `now`: remembered for alpn_memory (0: not at all).
  void chose_h1(const std::string& key, time_point now) {
    if (bounds_.alpn_memory.count() > 0)
      at(key).h1_until = now + bounds_.alpn_memory;
  }
  /// A transfer that offers h2 to `key`: true when it is to make the probe (none in flight), false
  /// when it waits for the probe in flight (then it is in its waiting list).
  bool join_probe(const std::string& key, const Waiter& waiter) {
    auto& o = at(key);
    if (!o.probe) {
      o.probe.emplace();
      return true;
    }
    o.probe->waiting.push_back(waiter);
    return false;
  }
  /// The probe to `key` has ended (answered or lost): the transfers that waited for it.
  std::vector<Waiter> end_probe(const std::string& key) {
    auto* o = find(key);
    if (!o || !o->probe)
      return {};
    auto waiting = std::move(o->probe->waiting);
    o->probe.reset();
    return waiting;
  }

  // ---- HTTP/1.1 links at rest ---------------------------------------------------------------
  /// The ready link of `key` most likely alive (the newest), or an empty handle.
  H1Link take_h1(const std::string& key) {
    auto* o = find(key);
    if (!o || o->h1_ready.empty())
      return H1Link{};
    auto link = std::move(o->h1_ready.back());
    o->h1_ready.pop_back();
    --h1_ready_;
    return link;
  }
  /// A link at rest joins `key`'s ready list; false (the link stays the caller's, to close) when
  /// the loop holds max_idle_h1 already.
  bool give_back_h1(const std::string& key, H1Link& link) {
    if (h1_ready_ >= bounds_.max_idle_h1)
      return false;
    at(key).h1_ready.push_back(std::move(link));
    ++h1_ready_;
    return true;
  }
  std::size_t h1_ready() const { return h1_ready_; }
  /// Every ready link is kept or not by `keep(link)` (one not kept is dropped: `keep` closes it
  /// first); the kept stay in their order, and an origin left empty at `now` is forgotten.
  template <class Keep>
  void sweep_h1(Keep&& keep, time_point now) {
    for (auto it = origins_.begin(); it != origins_.end();) {
      auto& ready = it->second.h1_ready;
      std::size_t kept = 0;
      for (auto& link : ready) {
        if (!keep(link))
          continue;
        if (&ready[kept] != &link)
          ready[kept] = std::move(link);
        ++kept;
      }
      h1_ready_ -= ready.size() - kept;
      ready.erase(ready.begin() + static_cast<std::ptrdiff_t>(kept), ready.end());
      if (it->second.empty(now))
        it = origins_.erase(it);
      else
        ++it;
    }
  }

  /// Every origin's part, with its key.
  template <class F>
  void each(F&& f) {
    for (auto& [key, o] : origins_)
      f(key, o);
  }

private:
  pool_bounds bounds_;
  std::unordered_map<std::string, origin> origins_;
  std::size_t h1_ready_ = 0; ///< in every origin's h1_ready
};

} // namespace gather
