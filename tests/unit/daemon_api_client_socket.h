// A blocking HTTP test client for the API server tests: it runs in its own thread
// while the test thread runs the libuv loop.  Every read is bounded (SO_RCVTIMEO), so
// a broken server makes the test fail, not hang.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace caesium::test {

class RawClient {
 public:
  // `source`: the loopback address to connect from (127.0.0.2, ...; nullptr = any), so
  // that one test can be several clients to the server.
  explicit RawClient(uint16_t port, int read_timeout_ms = 5000, const char* source = nullptr) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (source != nullptr) {
      sockaddr_in from{};
      from.sin_family = AF_INET;
      ::inet_pton(AF_INET, source, &from.sin_addr);
      ::bind(fd_, reinterpret_cast<sockaddr*>(&from), sizeof from);
    }
    timeval tv{};
    tv.tv_sec = read_timeout_ms / 1000;
    tv.tv_usec = (read_timeout_ms % 1000) * 1000;
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~RawClient() { ::close(fd_); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return connected_; }
  bool send(const std::string& bytes) {
    size_t at = 0;
    while (at < bytes.size()) {
      const ssize_t n = ::send(fd_, bytes.data() + at, bytes.size() - at, MSG_NOSIGNAL);
      if (n <= 0) return false;
      at += static_cast<size_t>(n);
    }
    return true;
  }
  // Reads until `enough(received)` holds, the peer closes (eof() then) or a read times
  // out.  Returns everything received so far on this connection.
  const std::string& read_until(const std::function<bool(const std::string&)>& enough) {
    char buf[4096];
    while (!enough(in_)) {
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n == 0 || (n < 0 && errno == ECONNRESET)) {  // closed (a reset counts: data was unread)
        eof_ = true;
        break;
      }
      if (n < 0) break;  // timeout
      in_.append(buf, static_cast<size_t>(n));
    }
    return in_;
  }
  // Reads until `count` complete responses (with Content-Length bodies) have arrived.
  const std::string& read_responses(size_t count) {
    return read_until([count](const std::string& s) { return complete_responses(s) >= count; });
  }
  const std::string& read_to_eof() {
    return read_until([this](const std::string&) { return eof_; });
  }
  bool eof() const { return eof_; }
  const std::string& received() const { return in_; }

  // How many complete responses `s` holds (1xx interim answers not counted).
  static size_t complete_responses(const std::string& s) {
    size_t count = 0, at = 0;
    while (true) {
      const size_t head_end = s.find("\r\n\r\n", at);
      if (head_end == std::string::npos) return count;
      const std::string head = s.substr(at, head_end - at);
      size_t length = 0;
      const size_t cl = head.find("Content-Length: ");
      if (cl != std::string::npos) length = std::stoul(head.substr(cl + 16));
      if (s.size() < head_end + 4 + length) return count;
      if (head.rfind("HTTP/1.1 1", 0) != 0) ++count;
      at = head_end + 4 + length;
    }
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
  bool eof_ = false;
  std::string in_;
};

// Runs `client` in a thread while `spin(done)` runs the loop; joins it.
template <class Spin>
void with_client_thread(Spin&& spin, const std::function<void()>& client) {
  std::atomic<bool> done{false};
  std::thread t([&] {
    client();
    done = true;
  });
  spin([&] { return done.load(); });
  t.join();
}

}  // namespace caesium::test
