// One c-ares channel on an Asio event loop: the queries of one lookup (endpoint_watch.cpp). Its
// sockets sit in the loop's epoll as stream_descriptors that never own their descriptor (c-ares
// opens and closes them and says so through its socket-state callback); its retransmissions and
// per-query timeouts ride on one loop timer set from ares_timeout(). No thread, no blocking call:
// /etc/hosts and resolv.conf are read when the channel is made and when a name is asked.
//
// Completions run on the loop's thread, from inside the call that asked (a name /etc/hosts
// answers) or from inside the channel's socket handling: they must not destroy the channel (post
// to the loop instead). Destroying the channel abandons what is still asked: no completion runs
// after the destructor began.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

namespace gather {

struct dns_srv_record {
  std::string target; ///< no trailing dot
  std::uint16_t port = 0;
  std::uint16_t priority = 0;
  std::uint16_t weight = 0;
};

/// How a query ended, for the watch: found, the name has nothing (NXDOMAIN, no record of the
/// type), or failed (timeout, server failure, refused, no server reachable: worth asking again).
enum class dns_status { found, nothing, failed };

struct dns_addresses {
  dns_status status = dns_status::found;
  std::vector<std::string> addresses; ///< IP literals as text, no brackets, in the answer's order
  std::string error;                  ///< c-ares's words when not found
};

struct dns_records {
  dns_status status = dns_status::found;
  std::vector<dns_srv_record> records;
  std::string error;
};

class dns_channel {
public:
  /// `servers`: "" for resolv.conf's, else ares_set_servers_ports_csv's list (tests, tools).
  dns_channel(boost::asio::io_context& loop, const std::string& servers);
  ~dns_channel();
  dns_channel(const dns_channel&) = delete;
  dns_channel& operator=(const dns_channel&) = delete;

  /// "" when the channel is ready, else why it could not be made (every ask then fails at once).
  const std::string& init_error() const;

  /// Every A and AAAA address of `name` (/etc/hosts first when resolv.conf and nsswitch say so).
  void addresses(const std::string& name, std::function<void(dns_addresses)> done);
  /// The SRV records of `name` (resolv.conf's search list applies as for any name).
  void srv(const std::string& name, std::function<void(dns_records)> done);

private:
  struct core;
  std::shared_ptr<core> core_;
};

} // namespace gather
