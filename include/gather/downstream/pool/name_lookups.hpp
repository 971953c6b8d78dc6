// Host name lookups for the downstream client, kept apart per name. getaddrinfo can be neither
// cancelled nor made asynchronous: a lookup holds its thread until the system's resolver answers
// or gives up (resolv.conf's timeout x attempts, 5 s x 2 by default). Asio runs all the lookups of
// an event loop on one thread, one after another, so a name that never resolves held every other
// name's lookups behind it. Here each host:port has a thread of its own, made at its first lookup,
// and lookups asked for while one is under way share its answer: a name that hangs holds one
// thread and delays only the calls to that same name (which end at their own timeouts).
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

namespace gather {

class name_lookups {
public:
  using endpoints = std::vector<boost::asio::ip::tcp::endpoint>;
  using completion = std::function<void(const boost::system::error_code&, endpoints)>;

  name_lookups();
  /// Waits for each name's thread; one inside getaddrinfo finishes that lookup first.
  ~name_lookups();
  name_lookups(const name_lookups&) = delete;
  name_lookups& operator=(const name_lookups&) = delete;

  /// Looks `host`:`port` up on that name's thread; `done` is posted to `loop` with the addresses
  /// or the error (boost::asio::error::host_not_found and the like, as Asio's resolver gives them).
  void resolve(const std::string& host, const std::string& port, boost::asio::io_context& loop, completion done);

  /// Threads made so far: one per host:port ever looked up.
  std::size_t threads() const;

private:
  struct name;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, std::unique_ptr<name>> names_;
};

} // namespace gather
