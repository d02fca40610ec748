// The strict HTTP/1.1 request parser (see http_request.h for what it accepts).
//
// Invariants:
//   - buf_ holds only bytes not yet consumed; in Phase::kHead, buf_[0, scanned_) holds
//     no complete "\r\n\r\n" (so a slow client does not make the search quadratic);
//   - state_ == kComplete  <=>  phase_ == kDone; req_ is then the whole request;
//   - once state_ == kError nothing changes any more.
#include "node/daemon/http/http_request.h"

#include <algorithm>
#include <limits>

namespace caesium::daemon {

namespace {

constexpr size_t kMaxChunkLineBytes = 1024;

bool is_tchar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_token(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), is_tchar); }

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

// The position in [from, to) of an LF not preceded by CR, or of a CR followed by
// anything but LF (a CR as the last buffered byte may still get its LF), else npos.
size_t bare_line_break(const std::string& buf, size_t from, size_t to) {
  for (size_t i = from; i < to && i < buf.size(); ++i) {
    if (buf[i] == '\n' && (i == 0 || buf[i - 1] != '\r')) return i;
    if (buf[i] == '\r' && i + 1 < buf.size() && buf[i + 1] != '\n') return i;
  }
  return std::string::npos;
}

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Splits a comma-separated header list into trimmed, non-empty elements.
std::vector<std::string_view> list_elements(std::string_view v) {
  std::vector<std::string_view> out;
  while (true) {
    const size_t comma = v.find(',');
    std::string_view part = trim_ows(v.substr(0, comma));
    if (!part.empty()) out.push_back(part);
    if (comma == std::string_view::npos) break;
    v.remove_prefix(comma + 1);
  }
  return out;
}

bool find_header_list_token(const ServerRequest& r, std::string_view name, std::string_view token) {
  for (const auto& [n, v] : r.headers) {
    if (n != name) continue;
    for (auto e : list_elements(v)) {
      if (equals_ignore_case(e, token)) return true;
    }
  }
  return false;
}

std::string sanitize_header_text(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7F) c = ' ';
  }
  return out;
}

}  // namespace

bool equals_ignore_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

const std::string* ServerRequest::header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (n == name) return &v;
  }
  return nullptr;
}

const std::string* ServerResponse::header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (equals_ignore_case(n, name)) return &v;
  }
  return nullptr;
}

RequestParser::RequestParser(HttpLimits limits) : limits_(limits) {}

RequestParser::State RequestParser::feed(std::string_view bytes) {
  if (state_ == State::kError) return state_;
  buf_.append(bytes);
  if (state_ == State::kIncomplete) advance();
  return state_;
}

ServerRequest RequestParser::take() {
  ServerRequest out = std::move(req_);
  req_ = ServerRequest{};
  state_ = State::kIncomplete;
  phase_ = Phase::kHead;
  scanned_ = 0;
  trailer_bytes_ = 0;
  remaining_ = 0;
  expect_continue_ = false;
  advance();
  return out;
}

bool RequestParser::take_expect_continue() {
  const bool e = expect_continue_;
  expect_continue_ = false;
  return e && state_ == State::kIncomplete;
}

bool RequestParser::fail(int status, std::string message) {
  state_ = State::kError;
  error_status_ = status;
  error_message_ = std::move(message);
  buf_.clear();
  return false;
}

void RequestParser::complete() {
  phase_ = Phase::kDone;
  state_ = State::kComplete;
}

bool RequestParser::take_body_bytes() {
  const size_t n = static_cast<size_t>(std::min<uint64_t>(remaining_, buf_.size()));
  req_.body.append(buf_, 0, n);
  buf_.erase(0, n);
  remaining_ -= n;
  return remaining_ == 0;
}

void RequestParser::advance() {
  while (state_ == State::kIncomplete) {
    switch (phase_) {
      case Phase::kHead: {
        // Empty lines before a request line are allowed (RFC 9112 §2.2).
        while (buf_.size() >= 2 && buf_[0] == '\r' && buf_[1] == '\n') buf_.erase(0, 2);
        const size_t from = scanned_ >= 3 ? scanned_ - 3 : 0;
        const size_t end = buf_.find("\r\n\r\n", from);
        // A bare LF (or a CR not followed by LF) ends no line we accept, so a head
        // written with them would never complete: refuse it now rather than wait for the
        // request timeout (docs/api.md promises 400 for a malformed head).
        if (const size_t bad = bare_line_break(buf_, scanned_ > 0 ? scanned_ - 1 : 0, end == std::string::npos ? buf_.size() : end);
            bad != std::string::npos) {
          fail(400, "lines must end with CRLF (a bare " + std::string(buf_[bad] == '\n' ? "LF" : "CR") +
                        " at byte " + std::to_string(bad) + " of the head)");
          return;
        }
        if (end == std::string::npos) {
          scanned_ = buf_.size();
          if (buf_.size() > limits_.max_header_bytes) {
            fail(431, "the request head is larger than " + std::to_string(limits_.max_header_bytes) + " bytes");
          }
          return;
        }
        if (end + 4 > limits_.max_header_bytes) {
          fail(431, "the request head is larger than " + std::to_string(limits_.max_header_bytes) + " bytes");
          return;
        }
        const std::string head = buf_.substr(0, end + 2);  // with the last line's CRLF
        buf_.erase(0, end + 4);
        scanned_ = 0;
        if (!parse_head(head)) return;
        if (!finish_head()) return;
        break;
      }
      case Phase::kBody:
        if (!take_body_bytes()) return;
        complete();
        break;
      case Phase::kChunkSize: {
        const size_t eol = buf_.find("\r\n");
        if (eol == std::string::npos) {
          if (buf_.size() > kMaxChunkLineBytes) fail(400, "a chunk-size line is too long");
          return;
        }
        std::string_view line(buf_.data(), eol);
        const size_t semi = line.find(';');  // chunk extensions are ignored
        std::string_view digits = trim_ows(line.substr(0, semi));
        if (digits.empty() || digits.size() > 15) return void(fail(400, "a chunk size is not a hexadecimal number"));
        uint64_t size = 0;
        for (char c : digits) {
          const int h = hex_value(c);
          if (h < 0) return void(fail(400, "a chunk size is not a hexadecimal number"));
          size = size * 16 + static_cast<uint64_t>(h);
        }
        buf_.erase(0, eol + 2);
        if (size == 0) {
          phase_ = Phase::kTrailers;
          break;
        }
        if (size > limits_.max_body_bytes - req_.body.size()) {
          return void(fail(413, "the request body is larger than " + std::to_string(limits_.max_body_bytes) + " bytes"));
        }
        remaining_ = size;
        phase_ = Phase::kChunkData;
        break;
      }
      case Phase::kChunkData:
        if (!take_body_bytes()) return;
        phase_ = Phase::kChunkDataEnd;
        break;
      case Phase::kChunkDataEnd: {
        if (buf_.size() < 2) return;
        if (buf_[0] != '\r' || buf_[1] != '\n') return void(fail(400, "chunk data is not followed by CRLF"));
        buf_.erase(0, 2);
        phase_ = Phase::kChunkSize;
        break;
      }
      case Phase::kTrailers: {
        const size_t eol = buf_.find("\r\n");
        if (eol == std::string::npos) {
          if (trailer_bytes_ + buf_.size() > limits_.max_header_bytes) fail(431, "the trailer section is too large");
          return;
        }
        trailer_bytes_ += eol + 2;
        if (trailer_bytes_ > limits_.max_header_bytes) return void(fail(431, "the trailer section is too large"));
        buf_.erase(0, eol + 2);
        if (eol == 0) complete();  // the blank line ends the message
        break;
      }
      case Phase::kDone:
        complete();
        break;
    }
  }
}

bool RequestParser::parse_head(std::string_view head) {
  size_t eol = head.find("\r\n");
  if (!parse_request_line(head.substr(0, eol))) return false;
  head.remove_prefix(eol + 2);
  while (!head.empty()) {
    eol = head.find("\r\n");
    if (!parse_header_line(head.substr(0, eol))) return false;
    head.remove_prefix(eol + 2);
  }
  return true;
}

bool RequestParser::parse_request_line(std::string_view line) {
  if (line.find('\n') != std::string_view::npos || line.find('\r') != std::string_view::npos) {
    return fail(400, "lines must end with CRLF");
  }
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return fail(400, "the request line must be METHOD SP TARGET SP HTTP-VERSION");
  }
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!is_token(method)) return fail(400, "the request method is not a token");
  if (target.empty() || target[0] != '/') return fail(400, "the request target must be an absolute path (origin-form)");
  for (char c : target) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7F || c == '#') return fail(400, "the request target contains a character that must be escaped");
  }
  if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || version[6] != '.' || version[5] < '0' ||
      version[5] > '9' || version[7] < '0' || version[7] > '9') {
    return fail(400, "the HTTP version is malformed");
  }
  if (version[5] != '1' || (version[7] != '0' && version[7] != '1')) {
    return fail(505, "only HTTP/1.0 and HTTP/1.1 are supported");
  }
  req_.method = std::string(method);
  req_.target = std::string(target);
  const size_t q = target.find('?');
  req_.path = std::string(target.substr(0, q));
  req_.query = q == std::string_view::npos ? std::string() : std::string(target.substr(q + 1));
  req_.version_minor = version[7] - '0';
  return true;
}

bool RequestParser::parse_header_line(std::string_view line) {
  if (line.empty()) return fail(400, "an empty header line");
  if (line[0] == ' ' || line[0] == '\t') return fail(400, "obsolete header line folding is not accepted");
  if (req_.headers.size() >= limits_.max_headers) {
    return fail(431, "more than " + std::to_string(limits_.max_headers) + " header fields");
  }
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) return fail(400, "a header line has no ':'");
  const std::string_view name = line.substr(0, colon);
  if (!is_token(name)) return fail(400, "a header name is not a token (no spaces before ':')");
  const std::string_view value = trim_ows(line.substr(colon + 1));
  for (char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7F) return fail(400, "a header value contains a control character");
  }
  std::string lname(name);
  for (char& c : lname) c = lower(c);
  req_.headers.emplace_back(std::move(lname), std::string(value));
  return true;
}

bool RequestParser::finish_head() {
  ServerRequest& r = req_;
  size_t hosts = 0;
  const std::string* content_length = nullptr;
  const std::string* transfer_encoding = nullptr;
  for (const auto& [n, v] : r.headers) {
    if (n == "host") ++hosts;
    if (n == "content-length") {
      if (content_length != nullptr) return fail(400, "more than one Content-Length header");
      content_length = &v;
    }
    if (n == "transfer-encoding") {
      if (transfer_encoding != nullptr) return fail(400, "more than one Transfer-Encoding header");
      transfer_encoding = &v;
    }
  }
  if (r.version_minor == 1 && hosts != 1) return fail(400, "an HTTP/1.1 request needs exactly one Host header");
  if (content_length != nullptr && transfer_encoding != nullptr) {
    return fail(400, "a request must not carry both Content-Length and Transfer-Encoding");
  }
  if (r.version_minor == 1) {
    r.keep_alive = !find_header_list_token(r, "connection", "close");
  } else {
    r.keep_alive = find_header_list_token(r, "connection", "keep-alive");
  }
  if (const std::string* expect = r.header("expect")) {
    if (!equals_ignore_case(*expect, "100-continue")) return fail(417, "only 'Expect: 100-continue' is supported");
    expect_continue_ = r.version_minor == 1;
  }
  if (transfer_encoding != nullptr) {
    if (r.version_minor == 0) return fail(400, "Transfer-Encoding is not allowed in HTTP/1.0");
    if (!equals_ignore_case(trim_ows(*transfer_encoding), "chunked")) {
      return fail(501, "only the chunked transfer coding is supported");
    }
    phase_ = Phase::kChunkSize;
    return true;
  }
  uint64_t length = 0;
  if (content_length != nullptr) {
    const std::string& v = *content_length;
    if (v.empty() || v.size() > 18 || !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return fail(400, "Content-Length is not a decimal number");
    }
    length = std::stoull(v);
  }
  if (length > limits_.max_body_bytes) {
    return fail(413, "the request body is larger than " + std::to_string(limits_.max_body_bytes) + " bytes");
  }
  if (length == 0) {
    expect_continue_ = false;
    complete();
    return true;
  }
  r.body.reserve(static_cast<size_t>(length));
  remaining_ = length;
  phase_ = Phase::kBody;
  return true;
}

const char* reason_phrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 206: return "Partial Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}

std::string serialize_response(const ServerResponse& response, bool close) {
  const int status = response.status >= 100 && response.status <= 999 ? response.status : 500;
  std::string out;
  out.reserve(128 + response.body.size());
  out += "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) + "\r\n";
  if (!response.content_type.empty()) out += "Content-Type: " + sanitize_header_text(response.content_type) + "\r\n";
  // 1xx, 204 and 304 carry no body and no Content-Length (RFC 9110 §8.6).
  const bool bodiless = status < 200 || status == 204 || status == 304;
  if (!bodiless) out += "Content-Length: " + std::to_string(response.body.size()) + "\r\n";
  for (const auto& [name, value] : response.headers) {
    if (!is_token(name)) continue;
    out += name + ": " + sanitize_header_text(value) + "\r\n";
  }
  if (close) out += "Connection: close\r\n";
  out += "\r\n";
  if (!bodiless) out += response.body;
  return out;
}

bool percent_decode(std::string_view in, std::string& out) {
  out.clear();
  out.reserve(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out.push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size()) return false;
    const int hi = hex_value(in[i + 1]);
    const int lo = hex_value(in[i + 2]);
    if (hi < 0 || lo < 0) return false;
    const char c = static_cast<char>(hi * 16 + lo);
    if (c == '\0') return false;
    out.push_back(c);
    i += 2;
  }
  return true;
}

bool parse_query(std::string_view query, std::vector<std::pair<std::string, std::string>>& out) {
  out.clear();
  while (!query.empty()) {
    const size_t amp = query.find('&');
    std::string part(query.substr(0, amp));
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (part.empty()) continue;
    std::replace(part.begin(), part.end(), '+', ' ');
    const size_t eq = part.find('=');
    std::string name, value;
    if (!percent_decode(std::string_view(part).substr(0, eq), name)) return false;
    if (eq != std::string::npos && !percent_decode(std::string_view(part).substr(eq + 1), value)) return false;
    out.emplace_back(std::move(name), std::move(value));
  }
  return true;
}

bool split_path(std::string_view path, std::vector<std::string>& segments) {
  segments.clear();
  if (path.empty() || path[0] != '/') return false;
  path.remove_prefix(1);
  while (true) {
    const size_t slash = path.find('/');
    std::string seg;
    if (!percent_decode(path.substr(0, slash), seg)) return false;
    segments.push_back(std::move(seg));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return true;
}

std::string percent_encode(std::string_view in) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (char c : in) {
    const bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                            c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved) {
      out.push_back(c);
    } else {
      const auto u = static_cast<unsigned char>(c);
      out.push_back('%');
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 15]);
    }
  }
  return out;
}

}  // namespace caesium::daemon
