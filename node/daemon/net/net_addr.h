// Addresses as the config and the Node core spell them: "host:port", where host is an
// IPv4 literal, a bracketed IPv6 literal ("[::1]:7946") or a DNS name.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"

namespace caesium::daemon {

struct HostPort {
  std::string host;  // without brackets
  uint16_t port = 0;
  bool is_ip_literal = false;
};

// Errors say what is wrong ("missing ':port'", "port 70000 is out of range").
// A port of 0 is accepted only with `allow_port_zero`.
Result<HostPort> parse_host_port(std::string_view text, bool allow_port_zero = false);

// "host:port" again (brackets around IPv6 literals).
std::string format_host_port(const HostPort& hp);

// True for the wildcard addresses (0.0.0.0, ::) that cannot be advertised to peers.
bool is_wildcard_host(std::string_view host);

// True for loopback hosts: 127.0.0.0/8, ::1 and "localhost".
bool is_loopback_host(std::string_view host);

}  // namespace caesium::daemon
