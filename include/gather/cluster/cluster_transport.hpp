// The cluster's transport under CAF's BASP (docs/cluster.md, "Trust"): connections Gather dials
// itself without blocking a thread, handed to the middleman as plain TCP or as TLS through CAF's
// OpenSSL module (its session does the handshake); and the node's TLS listener, which logs every
// peer whose handshake fails.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <caf/actor.hpp>
#include <caf/expected.hpp>
#include <caf/fwd.hpp>
#include <caf/io/fwd.hpp>

#include "gather/config/config.hpp"

namespace gather {

/// Makes every BASP connection of this actor system mutual TLS: CAF's OpenSSL module with this
/// certificate chain and key, accepting only peers whose certificate `tls.ca_file` signed.
void enable_cluster_tls(caf::actor_system_config& cfg, const cluster_tls_config& tls);

/// What is wrong with the three files (unreadable, not PEM, a key that is not the certificate's),
/// each problem naming its key as `labels` say (`cluster.tls.cert_file`, or `--tls-cert`).
struct tls_file_labels {
  std::string cert, key, ca;
};
std::vector<std::string> cluster_tls_problems(const cluster_tls_config& tls, const tls_file_labels& labels);

/// A connected socket's descriptor; closed when dropped unless released.
struct owned_socket {
  int fd = -1;
  explicit owned_socket(int d) : fd(d) {}
  ~owned_socket();
  owned_socket(const owned_socket&) = delete;
  owned_socket& operator=(const owned_socket&) = delete;
  int release() { return std::exchange(fd, -1); }
};

/// Dials host:port on `loop`, holding no thread: an IP address is used as is, a name resolved
/// asynchronously, and the TCP connect gives up after `timeout` (a SYN black hole costs one
/// timer). `done` runs on the loop with the connected socket, or null and the reason.
void dial(boost::asio::io_context& loop, const std::string& host, std::uint16_t port, millis timeout,
          std::function<void(std::shared_ptr<owned_socket>, std::string)> done);

/// Why a TLS handshake failed, written by the middleman's thread, read by a link.
struct handshake_note {
  void set(std::string why);
  std::string get() const;

private:
  mutable std::mutex mutex_;
  std::string why_;
};

/// Hands a connected, nonblocking socket to the middleman: plain, or (with `tls`) the client side
/// of a TLS session whose failure reason lands in `note`. Null when the session cannot start.
caf::io::scribe_ptr link_scribe(caf::actor_system& system, int fd, bool tls,
                                std::shared_ptr<handshake_note> note);

/// Publishes `whom` on host:port over mutual TLS; each peer whose handshake fails (no certificate,
/// one another CA signed, plain TCP) is refused and logged (`cluster_peer_refused`). The port.
caf::expected<std::uint16_t> publish_tls(caf::actor_system& system, const caf::actor& whom,
                                         std::uint16_t port, const std::string& host);

/// The BASP broker, which takes dialled connections (connect_atom) and listeners (publish_atom).
caf::actor basp_broker_of(caf::actor_system& system);

} // namespace gather
