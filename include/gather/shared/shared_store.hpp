// The shared store (docs/shared.md): the Redis server several gateways share rate limits and
// cached answers through. One connection per event loop (app/shared/store_connection.hpp); the
// store serves admission and the section cache, below the actors.
//
// When the store fails (unreachable, slower than timeout_ms, an error answer), an operation
// ends as a store error within timeout_ms; after 5 failures in a row the store is not asked for
// 1 s at a time (operations end `skipped` at once), then one is let through to try again. Its
// users decide without it meanwhile (a shared limit from a local bucket of rate/G, a shared
// cache from the gateway's own). Log lines say when it goes down and comes back; /healthz and
// the metrics read `shared_figures`.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "gather/config/config.hpp"
#include "gather/runtime/io_loops.hpp"
#include "gather/shared/resp_value.hpp"
#include "gather/values/shared_figures.hpp"
#include "gather/values/store_budget.hpp"

namespace gather {

class store_connection;

/// What a store operation's caller gets, once, on the loop it asked from. It answers whether an
/// `ok` answer was of the shape it needed: one that was not (a store that is not what it should
/// be) counts as a store error.
using store_done = std::function<bool(store_result, const resp_value&)>;

class shared_store {
public:
  static constexpr int failures_to_open = 5;
  static constexpr std::chrono::milliseconds open_for{1000};
  static constexpr std::chrono::milliseconds announce_every{1000};

  /// Reads the password file and resolves the host (both may block: call it off the loops).
  /// Throws std::runtime_error saying what is wrong (an unreadable password file, a host that
  /// does not resolve).
  explicit shared_store(const shared_config& cfg);
  ~shared_store();
  shared_store(const shared_store&) = delete;
  shared_store& operator=(const shared_store&) = delete;

  /// Connects one connection per loop and announces this gateway every second from loop 0.
  /// `figures` outlives the store.
  void start(io_loops& loops, shared_figures& figures);
  /// Closes every connection on its loop and returns when done. Never from a loop's thread.
  void stop();

  /// Sends `argv` on the calling loop's connection, unless the store counts as down (the
  /// breaker open, or no connection) or `budget` (the request's, when the operation is made for
  /// one) is spent: then `skipped` at once. The operation waits at most timeout_ms, and at most
  /// what is left of `budget`. Call it on a loop's thread; `done` runs there, later, exactly once.
  void call(store_op op, const std::vector<std::string>& argv, store_done done,
            const std::shared_ptr<store_budget>& budget = nullptr);
  /// Counts an operation its caller did not make because the store is down (`skipped`).
  void skipped(store_op op);

  /// The connection of loop 0 answers and the breaker is closed.
  bool up() const;
  /// G: the gateways sharing the store, as last seen (1 before any was seen).
  std::uint64_t gateways() const;
  const shared_config& cfg() const { return cfg_; }
  /// Runs `tick` on loop 0 every sync_ms (at least 1 ms) for as long as it lives.
  void every_sync(std::weak_ptr<std::function<void()>> tick);

private:
  struct loop_part;
  void finished(store_op op, store_result result);
  void set_state(bool up, const std::string& why);
  void announce();
  void on_tick();

  shared_config cfg_;
  std::string address_;  ///< the host resolved
  std::string password_;
  std::string id_;       ///< this gateway in the announcements
  io_loops* loops_ = nullptr;
  shared_figures* figures_ = nullptr;
  std::vector<std::shared_ptr<loop_part>> parts_; ///< one per loop
  std::atomic<int> failures_{0};
  std::atomic<std::int64_t> open_until_ns_{0};
  std::atomic<int> ready_connections_{0};
  std::atomic<std::uint64_t> gateways_{1};
  std::mutex state_mutex_; ///< the up/down log lines, in order
  int logged_state_ = -1;  ///< -1 nothing logged yet, 0 down, 1 up
  bool announcing_ = false; ///< loop 0 only
  std::mutex ticks_mutex_;
  std::vector<std::weak_ptr<std::function<void()>>> ticks_;
};

/// A stable hash of a client key for the store's keys (SHA-256, 32 hex digits): the same on
/// every gateway, and never the key as sent.
std::string store_key_hash(std::string_view client_key);

} // namespace gather
