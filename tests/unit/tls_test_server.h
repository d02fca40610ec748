// An HttpServer speaking TLS on 127.0.0.1 with fresh test certificates
// (tls_test_certs.h), for the server's and the CLI's TLS tests.  It answers every
// request with 200 and a JSON body naming the path and the Authorization header it got;
// clients run in a thread (with_client) while the test thread runs the loop.
#pragma once

#include <memory>
#include <string>

#include "node/daemon/http/http_server.h"
#include "tests/unit/daemon_api_client_socket.h"
#include "tests/unit/daemon_exec_test_loop.h"
#include "tests/unit/daemon_test_support.h"
#include "tests/unit/tls_test_certs.h"

namespace caesium::test {

struct TlsTestServer {
  TestLoop loop;
  TempDir dir{"caesium-tls-test"};
  TestCertificates certs{dir.path};
  std::unique_ptr<daemon::HttpServer> server;

  // `verify_client`: require a client certificate signed by certs.ca.
  explicit TlsTestServer(bool verify_client = false) {
    auto tls = daemon::TlsContext::server(
        daemon::TlsFiles{certs.server_cert, certs.server_key, verify_client ? certs.ca : "", verify_client});
    REQUIRE(tls.ok());
    daemon::HttpServerOptions o;
    o.tls = *tls;
    server = std::make_unique<daemon::HttpServer>(
        loop.get(), o, [](daemon::ServerRequest req, daemon::HttpServer::Respond respond) {
          daemon::ServerResponse r;
          r.content_type = "application/json";
          const std::string* auth = req.header("authorization");
          r.body = R"({"node": "tls-test", "path": ")" + req.path + R"(", "authorization": ")" +
                   (auth != nullptr ? *auth : std::string()) + R"("})";
          respond(r);
        });
    REQUIRE(server->listen("127.0.0.1:0").ok());
  }
  ~TlsTestServer() {
    server.reset();
    loop.drain();
  }
  std::string url(const std::string& path = "/") const {
    return "https://127.0.0.1:" + std::to_string(server->port()) + path;
  }
  template <class F>
  void with_client(F&& client) {
    with_client_thread([&](const std::function<bool()>& done) { return loop.run_until(done); }, client);
  }
};

}  // namespace caesium::test
