// HTTP/1.1 on the server side, without I/O: a strict, incremental request parser and the
// serialisation of responses.  The API server (http_server.h) feeds it bytes from a
// socket; the fuzz target and the tests feed it bytes from anywhere.
//
// Why our own parser rather than libhttp-parser: the API needs a small, strict subset
// (origin-form targets, Content-Length or chunked bodies, no upgrades) with limits that
// answer with the right status, and a parser we can fuzz together with the routing.
// It is ~400 lines with no dependency; http-parser is unmaintained upstream.
//
// What it accepts (RFC 9112), and what it refuses with which status:
//   request line   METHOD SP origin-form SP HTTP/1.0|HTTP/1.1 CRLF   (400; 505 other versions)
//                  one or more empty lines before it are skipped (RFC 9112 §2.2)
//   header fields  token ":" OWS value OWS CRLF; no obs-fold, no control characters
//                  except HTAB in values (400); at most `max_headers` (431)
//   head size      request line + fields + the blank line <= max_header_bytes (431)
//   Host           exactly one for HTTP/1.1 (400)
//   body           Content-Length (one, digits; 400 otherwise) or Transfer-Encoding:
//                  chunked (any other coding: 501; both headers: 400); a body above
//                  max_body_bytes is refused as soon as that is known (413).  Chunk
//                  extensions are ignored; trailers are read (within the head limit) and
//                  dropped.
//   Expect         100-continue is reported (the server answers "100 Continue" before
//                  reading the body); any other expectation: 417.
// Lines must end in CRLF; a bare LF is a 400 (strict on purpose: smuggling defences).
// After an error the parser stays failed: the server answers and closes the connection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace caesium::daemon {

struct HttpLimits {
  size_t max_header_bytes = 16 * 1024;
  size_t max_headers = 100;
  size_t max_body_bytes = size_t{1} << 20;
};

struct ServerRequest {
  std::string method;   // as sent (methods are case-sensitive)
  std::string target;   // the raw request-target, e.g. "/v1/status?x=1"
  std::string path;     // target before '?', still percent-encoded
  std::string query;    // target after '?', "" when none
  int version_minor = 1;  // HTTP/1.<minor>
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-case, in order
  std::string body;
  bool keep_alive = true;  // HTTP/1.1 unless "Connection: close"; 1.0 only with keep-alive

  // The first value of header `name` (lower-case), or nullptr.
  const std::string* header(std::string_view name) const;
};

struct ServerResponse {
  int status = 200;
  std::string content_type = "application/json";  // "" = no Content-Type header
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
  std::string body;
  bool close = false;  // close the connection after this response

  const std::string* header(std::string_view name) const;  // case-insensitive
};

class RequestParser {
 public:
  enum class State : uint8_t { kIncomplete, kComplete, kError };

  explicit RequestParser(HttpLimits limits = {});

  // Appends bytes and parses as far as they allow.  Bytes after a complete request
  // stay buffered for the next one (take() keeps them).  Returns state().
  State feed(std::string_view bytes);
  State state() const { return state_; }

  // The complete request; the parser then starts on the buffered remainder.
  // REQUIRES: state() == kComplete.
  ServerRequest take();

  // True once per request whose head asked for "Expect: 100-continue" while its body
  // is still to come; the server then writes "HTTP/1.1 100 Continue".
  bool take_expect_continue();

  // When state() == kError: the status to answer with (400, 413, 417, 431, 501, 505)
  // and a sentence saying why.
  int error_status() const { return error_status_; }
  const std::string& error_message() const { return error_message_; }

  // Whether any byte of the next request has arrived (for the server's timeouts).
  bool started() const { return !buf_.empty() || phase_ != Phase::kHead; }
  size_t buffered_bytes() const { return buf_.size(); }

 private:
  enum class Phase : uint8_t { kHead, kBody, kChunkSize, kChunkData, kChunkDataEnd, kTrailers, kDone };

  void advance();
  // Moves up to remaining_ buffered bytes into the body; true when none remain.
  bool take_body_bytes();
  bool parse_head(std::string_view head);
  bool parse_request_line(std::string_view line);
  bool parse_header_line(std::string_view line);
  bool finish_head();
  bool fail(int status, std::string message);
  void complete();

  HttpLimits limits_;
  State state_ = State::kIncomplete;
  Phase phase_ = Phase::kHead;
  std::string buf_;         // unparsed bytes
  size_t scanned_ = 0;      // bytes of buf_ already searched for the end of the head
  size_t trailer_bytes_ = 0;
  uint64_t remaining_ = 0;  // body bytes (or chunk bytes) still to read
  bool expect_continue_ = false;
  ServerRequest req_;
  int error_status_ = 0;
  std::string error_message_;
};

// "OK", "Not Found", ... ("Unknown" for codes we never send).
const char* reason_phrase(int status);

// The bytes of a response: status line, Content-Type (unless empty), Content-Length,
// "Connection: close" when `close`, the extra headers (CR, LF and other control
// characters in names or values are replaced by spaces, so a value cannot inject a
// header), the blank line and the body.  HEAD-style bodiless answers are not needed.
std::string serialize_response(const ServerResponse& response, bool close);

// Decodes %XX escapes (and nothing else: '+' stays '+', as in a path).  Invalid escapes
// and decoded NUL bytes are errors (false).
bool percent_decode(std::string_view in, std::string& out);

// Splits a query string "a=1&b=x%20y" into decoded (name, value) pairs, in order; '+'
// means a space here.  False on an invalid escape.
bool parse_query(std::string_view query, std::vector<std::pair<std::string, std::string>>& out);

// Splits a path into its segments ("/v1/a/" -> {"v1", "a", ""}), each percent-decoded.
// False when the path does not start with '/' or a segment does not decode.
bool split_path(std::string_view path, std::vector<std::string>& segments);

// Percent-encodes everything outside the RFC 3986 unreserved set.
std::string percent_encode(std::string_view in);

bool equals_ignore_case(std::string_view a, std::string_view b);

}  // namespace caesium::daemon
