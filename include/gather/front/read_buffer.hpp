// The bytes an HTTP/1.1 connection has read and not yet parsed, with one promise Beast's
// flat_buffer does not make: the region handed to a pending read stays where it is until that
// read ends, whatever is parsed and consumed meanwhile.
//
// Why: a connection reads ahead while a request runs (a pipelined request, or a client that hangs
// up), and the answer can come back and the next requests be parsed before that read completes.
// flat_buffer rewinds to its start when everything has been consumed, so the bytes the kernel
// then wrote at the old position were committed at the new one: the next request was parsed from
// stale bytes, another request's target and headers. Here the readable bytes only ever rewind or
// move in begin_read, when no read is pending by construction.
#pragma once

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstring>
#include <memory>

#include <boost/asio/buffer.hpp>

namespace gather {

class read_buffer {
public:
  explicit read_buffer(std::size_t limit) : limit_(limit) {}

  read_buffer(const read_buffer&) = delete;
  read_buffer& operator=(const read_buffer&) = delete;

  /// The bytes read and not consumed.
  boost::asio::const_buffer data() const { return {storage_.get() + begin_, end_ - begin_}; }
  std::size_t size() const { return end_ - begin_; }
  /// True between begin_read and end_read.
  bool reading() const { return reading_; }

  /// The most bytes it holds: a read is offered only the room below it.
  std::size_t limit() const { return limit_; }
  void set_limit(std::size_t limit) { limit_ = std::max(limit, size()); }
  std::size_t room() const { return limit_ > size() ? limit_ - size() : 0; }

  void consume(std::size_t n) {
    begin_ += std::min(n, size());
    if (begin_ == end_ && !reading_)
      begin_ = end_ = 0; // nothing readable and nothing pending: start again at the front
  }

  /// The region the next read fills: at most `max` bytes (and at most room()). Compacts or grows
  /// the storage first, the only place it moves. One read at a time.
  boost::asio::mutable_buffer begin_read(std::size_t max) {
    assert(!reading_);
    const auto want = std::min(max, room());
    if (capacity_ - end_ < want) {
      const auto held = size();
      if (capacity_ >= held + want) {
        std::memmove(storage_.get(), storage_.get() + begin_, held);
      } else {
        const auto grown = std::min(std::max(capacity_ * 2, held + want), std::max(limit_, held + want));
        std::unique_ptr<char[]> bigger(new char[grown]);
        if (held != 0)
          std::memcpy(bigger.get(), storage_.get() + begin_, held);
        storage_ = std::move(bigger);
        capacity_ = grown;
      }
      begin_ = 0;
      end_ = held;
    }
    reading_ = true;
    return {storage_.get() + end_, want};
  }

  /// The pending read ended having written `n` bytes into its region (0 on an error).
  void end_read(std::size_t n) {
    assert(reading_);
    reading_ = false;
    end_ += n;
    consume(0); // rewinds if everything was consumed meanwhile and this read brought nothing
  }

  /// Bytes that arrived another way (read while the protocol was chosen).
  void append(const char* bytes, std::size_t n) {
    limit_ = std::max(limit_, size() + n);
    const auto region = begin_read(n);
    std::memcpy(region.data(), bytes, n);
    end_read(n);
  }

  /// Gives the storage back while nothing is held or pending (an idle keep-alive connection).
  void release() {
    if (size() != 0 || reading_)
      return;
    storage_.reset();
    capacity_ = begin_ = end_ = 0;
  }

private:
  std::unique_ptr<char[]> storage_;
  std::size_t capacity_ = 0;
  std::size_t begin_ = 0; ///< first unconsumed byte
  std::size_t end_ = 0;   ///< one past the last byte read; a pending read writes from here
  std::size_t limit_;
  bool reading_ = false;
};

} // namespace gather
