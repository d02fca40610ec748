#include "node/daemon/net/net_addr.h"

#include <arpa/inet.h>

#include <cctype>

namespace caesium::daemon {
namespace {

bool valid_dns_name(std::string_view host) {
  if (host.empty() || host.size() > 253) return false;
  for (char ch : host) {
    const auto c = static_cast<unsigned char>(ch);
    if (!std::isalnum(c) && c != '-' && c != '.' && c != '_') return false;
  }
  return true;
}

}  // namespace

Result<HostPort> parse_host_port(std::string_view text, bool allow_port_zero) {
  const std::string shown = "\"" + std::string(text) + "\"";
  HostPort hp;
  std::string_view port_text;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return Error(shown + " is not an address: expected [ipv6]:port");
    }
    hp.host = std::string(text.substr(1, close - 1));
    port_text = text.substr(close + 2);
    in6_addr a6{};
    if (inet_pton(AF_INET6, hp.host.c_str(), &a6) != 1) return Error(shown + ": '" + hp.host + "' is not an IPv6 address");
    hp.is_ip_literal = true;
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) return Error(shown + " is not an address: missing ':port'");
    hp.host = std::string(text.substr(0, colon));
    port_text = text.substr(colon + 1);
    if (hp.host.find(':') != std::string::npos) {
      return Error(shown + " is not an address: write IPv6 addresses in brackets, e.g. [::1]:7946");
    }
    in_addr a4{};
    hp.is_ip_literal = inet_pton(AF_INET, hp.host.c_str(), &a4) == 1;
    if (!hp.is_ip_literal && !valid_dns_name(hp.host)) {
      return Error(shown + " is not an address: '" + hp.host + "' is neither an IP address nor a host name");
    }
  }
  if (port_text.empty() || port_text.size() > 5) return Error(shown + " is not an address: bad port");
  uint32_t port = 0;
  for (char c : port_text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return Error(shown + " is not an address: bad port");
    port = port * 10 + static_cast<uint32_t>(c - '0');
  }
  if (port > 65535) return Error(shown + ": port " + std::to_string(port) + " is out of range");
  if (port == 0 && !allow_port_zero) return Error(shown + ": port 0 is not allowed here");
  hp.port = static_cast<uint16_t>(port);
  return hp;
}

std::string format_host_port(const HostPort& hp) {
  if (hp.host.find(':') != std::string::npos) return "[" + hp.host + "]:" + std::to_string(hp.port);
  return hp.host + ":" + std::to_string(hp.port);
}

bool is_wildcard_host(std::string_view host) { return host == "0.0.0.0" || host == "::" || host.empty(); }

bool is_loopback_host(std::string_view host) {
  return host == "localhost" || host == "::1" || host.substr(0, 4) == "127.";
}

}  // namespace caesium::daemon
