// The `caesium` client commands over HTTPS with the real transport (libcurl) against a
// TLS server on loopback (tls_test_server.h): --ca-file makes the node trusted, without
// it the command fails naming the certificate problem, and a node that verifies clients
// takes --cert-file/--key-file.  The token travels in the Authorization header.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "node/cli/client.h"
#include "tests/unit/cli_run.h"
#include "tests/unit/tls_test_server.h"

using namespace caesium;
using caesium::test::TlsTestServer;

namespace {

test::CliRun run_cli(TlsTestServer& s, std::vector<std::string> args) {
  test::FakeCli cli;
  cli.env["CAESIUM_TOKEN"] = "tls-test-token-0123";
  cli.connect = cli::curl_transport;
  test::CliRun r;
  args.insert(args.begin() + 1, {"--api", s.url(), "--timeout", "5s"});
  s.with_client([&] { r = cli.run(args); });
  return r;
}

}  // namespace

TEST_CASE("cli tls: --ca-file makes the node trusted, without it the command fails on the certificate") {
  TlsTestServer s;
  const test::CliRun ok = run_cli(s, {"status", "--json", "--ca-file", s.certs.ca});
  REQUIRE(ok.status == 0);
  const auto body = nlohmann::json::parse(ok.out);
  CHECK(body["path"] == "/v1/status");
  CHECK(body["authorization"] == "Bearer tls-test-token-0123");

  const test::CliRun other_ca = run_cli(s, {"status", "--json", "--ca-file", s.certs.stranger_ca});
  CHECK(other_ca.status == 1);
  CHECK(other_ca.err.find("certificate") != std::string::npos);
  CHECK(other_ca.out.empty());
  CHECK(s.server->stats().requests == 1);
}

TEST_CASE("cli tls: a node that verifies clients takes --cert-file and --key-file") {
  TlsTestServer s(/*verify_client=*/true);
  const test::CliRun without = run_cli(s, {"status", "--json", "--ca-file", s.certs.ca});
  CHECK(without.status == 1);
  CHECK(without.out.empty());
  const test::CliRun with = run_cli(s, {"status", "--json", "--ca-file", s.certs.ca, "--cert-file", s.certs.client_cert,
                                        "--key-file", s.certs.client_key});
  REQUIRE(with.status == 0);
  CHECK(nlohmann::json::parse(with.out)["path"] == "/v1/status");
  CHECK(s.server->stats().requests == 1);
}
