// The parts of one origin's pool on one event loop that need no socket, so that each is a unit test
// (tests/downstream/pool/origin_pool_test.cpp): its links, one list per link state (link_machine.hpp),
// moved between the lists by the one observer of each link's machine; and what the origin's https
// server chose by ALPN (origin_protocol), remembered for downstream_alpn_memory_ms.
//
// Who uses them (docs/architecture.md, the downstream row): h2_client keeps its links per origin
// in link_lists; loop_client files what ALPN chose on the connection an `http2` transfer made
// (h1_alpn.cpp) in protocol_memory and asks it whether such a transfer goes straight to HTTP/1.1.
// The HTTP/1.1 client's ready lists are not yet in link_lists: one pool per origin holding both
// protocols' lists is the step after (issue #47 item 2).
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gather/downstream/pool/link_machine.hpp"

namespace gather {

/// What an origin speaks, as far as its pool knows: nothing asked yet (or forgotten), or what its
/// https server's ALPN chose (a plain-http origin is h2 only by the section's `http2`, h2c).
enum class origin_protocol { unknown, h1, h2 };

const char* to_string(origin_protocol protocol);

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

/// What the https servers of one loop's origins chose by ALPN for `http2` calls: an origin whose
/// server chose http/1.1 is called over HTTP/1.1 for `memory` (downstream_alpn_memory_ms) without
/// offering h2 again; one that chose h2 is remembered as long. 0: nothing remembered, every new
/// connection offers h2.
class protocol_memory {
public:
  using clock = std::chrono::steady_clock;

  explicit protocol_memory(std::chrono::milliseconds memory) : memory_(memory) {}

  /// What `key`'s server chose, if that is still remembered at `now` (an answer older than the
  /// memory is forgotten here: unknown).
  origin_protocol of(const std::string& key, clock::time_point now);
  /// `key`'s server chose `protocol` at `now` (unknown: forget it).
  void chose(const std::string& key, origin_protocol protocol, clock::time_point now);
  /// Origins remembered (some perhaps past their time, until asked).
  std::size_t size() const { return known_.size(); }
  bool empty() const { return known_.empty(); }

private:
  struct answer {
    origin_protocol protocol;
    clock::time_point until;
  };
  std::chrono::milliseconds memory_;
  std::unordered_map<std::string, answer> known_;
};

} // namespace gather
