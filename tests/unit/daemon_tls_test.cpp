// The API server's TLS (node/daemon/http/tls.h) on loopback with libcurl as the client:
// HTTPS answered, a client that does not trust the CA refused, plain HTTP to the TLS
// port told to use HTTPS, client certificates required when configured (none, or one
// from another CA, is refused), and the certificate files' errors.
#include <catch2/catch.hpp>

#include <curl/curl.h>

#include "tests/unit/tls_test_server.h"

using namespace caesium;
using namespace caesium::daemon;
using caesium::test::RawClient;
using caesium::test::TlsTestServer;

namespace {

struct Got {
  CURLcode code = CURLE_OK;
  long status = 0;
  std::string body;
};

size_t append(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

// One blocking GET; `ca` "" means the system's CAs.
Got https_get(const std::string& url, const std::string& ca, const std::string& cert = {}, const std::string& key = {}) {
  Got g;
  CURL* e = curl_easy_init();
  curl_easy_setopt(e, CURLOPT_URL, url.c_str());
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 5000L);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, append);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &g.body);
  if (!ca.empty()) curl_easy_setopt(e, CURLOPT_CAINFO, ca.c_str());
  if (!cert.empty()) curl_easy_setopt(e, CURLOPT_SSLCERT, cert.c_str());
  if (!key.empty()) curl_easy_setopt(e, CURLOPT_SSLKEY, key.c_str());
  g.code = curl_easy_perform(e);
  curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &g.status);
  curl_easy_cleanup(e);
  return g;
}

// Sends raw bytes to the server and reads until it closes.
struct Raw {
  std::string got;
  bool closed = false;
};
Raw raw_exchange(TlsTestServer& s, const std::string& bytes) {
  Raw r;
  s.with_client([&] {
    RawClient c(s.server->port());
    c.send(bytes);
    r.got = c.read_to_eof();
    r.closed = c.eof();
  });
  return r;
}

}  // namespace

TEST_CASE("tls: HTTPS with the CA is answered, a client without the CA refuses the server") {
  TlsTestServer s;
  Got trusted, untrusted, twice;
  s.with_client([&] {
    trusted = https_get(s.url("/v1/status"), s.certs.ca);
    untrusted = https_get(s.url("/v1/status"), s.certs.stranger_ca);
    twice = https_get(s.url("/again"), s.certs.ca);
  });
  CHECK(trusted.code == CURLE_OK);
  CHECK(trusted.status == 200);
  CHECK(trusted.body.find(R"("path": "/v1/status")") != std::string::npos);
  CHECK(untrusted.code == CURLE_PEER_FAILED_VERIFICATION);
  CHECK(untrusted.body.empty());
  CHECK(twice.status == 200);
  CHECK(s.server->stats().requests == 2);
  CHECK(s.server->stats().tls_failures == 1);  // the untrusting client's alert
}

TEST_CASE("tls: plain HTTP to the TLS port gets a plain-text 400 that says to use HTTPS") {
  TlsTestServer s;
  const auto [got, closed] = raw_exchange(s, "GET /v1/status HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(got.rfind("HTTP/1.1 400 ", 0) == 0);
  CHECK(got.find("speaks HTTPS") != std::string::npos);
  CHECK(closed);
  CHECK(s.server->stats().requests == 0);
}

TEST_CASE("tls: garbage after a ClientHello's first byte fails the handshake and closes, nothing more") {
  TlsTestServer s;
  const auto [got, closed] = raw_exchange(s, std::string("\x16\x03\x01\x00\x05hello-not-a-handshake", 26));
  CHECK(got.find("HTTP/1.1") == std::string::npos);  // an alert at most, never an answer
  CHECK(closed);
  CHECK(s.server->stats().tls_failures == 1);
  CHECK(s.server->stats().requests == 0);
}

TEST_CASE("tls: with client verification only a certificate from the configured CA gets in") {
  TlsTestServer s(/*verify_client=*/true);
  Got none, stranger, member;
  s.with_client([&] {
    none = https_get(s.url("/a"), s.certs.ca);
    stranger = https_get(s.url("/b"), s.certs.ca, s.certs.stranger_cert, s.certs.stranger_key);
    member = https_get(s.url("/c"), s.certs.ca, s.certs.client_cert, s.certs.client_key);
  });
  CHECK(none.code != CURLE_OK);
  CHECK(none.status == 0);
  CHECK(stranger.code != CURLE_OK);
  CHECK(stranger.status == 0);
  CHECK(member.code == CURLE_OK);
  CHECK(member.status == 200);
  CHECK(member.body.find(R"("path": "/c")") != std::string::npos);
  CHECK(s.server->stats().requests == 1);
  CHECK(s.server->stats().tls_failures == 2);
}

TEST_CASE("tls: unreadable, non-PEM or mismatched certificate files are errors naming the file") {
  test::TempDir d;
  test::TestCertificates c(d.path);
  auto missing = TlsContext::server(TlsFiles{d.sub("absent.pem"), c.server_key, "", false});
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().message.find("absent.pem cannot be read") != std::string::npos);
  auto mismatched = TlsContext::server(TlsFiles{c.server_cert, c.client_key, "", false});
  REQUIRE_FALSE(mismatched.ok());
  CHECK(mismatched.error().message.find("does not match the certificate") != std::string::npos);
  auto not_pem = TlsContext::server(TlsFiles{c.server_key, c.server_key, "", false});  // a key where the cert goes
  REQUIRE_FALSE(not_pem.ok());
  CHECK(not_pem.error().message.find("no usable PEM certificate") != std::string::npos);
  auto no_ca = TlsContext::server(TlsFiles{c.server_cert, c.server_key, "", true});
  REQUIRE_FALSE(no_ca.ok());
  CHECK(no_ca.error().message.find("needs a CA file") != std::string::npos);
  CHECK(TlsContext::server(TlsFiles{c.server_cert, c.server_key, c.ca, true}).ok());
}
