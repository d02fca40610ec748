// Certificates for the TLS tests, made fresh by each test with OpenSSL (no files kept in
// the repository, so none expires): a CA, a server certificate for 127.0.0.1 signed by
// it, a client certificate signed by it, and a client certificate from another CA.
// Keys are P-256 (fast to make); every certificate is valid from an hour ago for a day.
#pragma once

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <tuple>

namespace caesium::test {

namespace tls_detail {

inline EVP_PKEY* new_key() {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  if (key == nullptr) throw std::runtime_error("OpenSSL could not make a test key");
  return key;
}

inline void add_ext(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (ext == nullptr) throw std::runtime_error("OpenSSL could not make a test certificate extension");
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// A certificate for `key` named `cn`, signed by `issuer_key` (itself when issuer is null).
inline X509* new_cert(EVP_PKEY* key, const char* cn, X509* issuer, EVP_PKEY* issuer_key, bool ca, long serial) {
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert), 86400);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn), -1, -1, 0);
  X509_set_issuer_name(cert, issuer != nullptr ? X509_get_subject_name(issuer) : name);
  X509* signer = issuer != nullptr ? issuer : cert;
  if (ca) {
    add_ext(cert, signer, NID_basic_constraints, "critical,CA:TRUE");
    add_ext(cert, signer, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    add_ext(cert, signer, NID_basic_constraints, "critical,CA:FALSE");
    add_ext(cert, signer, NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost");
    add_ext(cert, signer, NID_ext_key_usage, "serverAuth,clientAuth");
  }
  if (X509_sign(cert, issuer_key != nullptr ? issuer_key : key, EVP_sha256()) == 0) {
    throw std::runtime_error("OpenSSL could not sign a test certificate");
  }
  return cert;
}

inline void write_pem(const std::string& path, X509* cert, EVP_PKEY* key) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) throw std::runtime_error("cannot write " + path);
  if (cert != nullptr) PEM_write_X509(f, cert);
  if (key != nullptr) PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
  std::fclose(f);
}

}  // namespace tls_detail

struct TestCertificates {
  std::string ca;           // the CA's certificate
  std::string server_cert;  // 127.0.0.1 and localhost, signed by the CA
  std::string server_key;
  std::string client_cert;  // signed by the CA
  std::string client_key;
  std::string stranger_cert;  // a client certificate from another CA
  std::string stranger_key;
  std::string stranger_ca;

  // Writes every file into `dir` (which must exist).
  explicit TestCertificates(const std::string& dir) {
    using namespace tls_detail;
    ca = dir + "/ca.pem";
    server_cert = dir + "/server.pem";
    server_key = dir + "/server.key";
    client_cert = dir + "/client.pem";
    client_key = dir + "/client.key";
    stranger_cert = dir + "/stranger.pem";
    stranger_key = dir + "/stranger.key";
    stranger_ca = dir + "/stranger-ca.pem";
    EVP_PKEY* ca_key = new_key();
    X509* ca_cert = new_cert(ca_key, "caesium test CA", nullptr, nullptr, true, 1);
    write_pem(ca, ca_cert, nullptr);
    EVP_PKEY* other_ca_key = new_key();
    X509* other_ca = new_cert(other_ca_key, "another CA", nullptr, nullptr, true, 2);
    write_pem(stranger_ca, other_ca, nullptr);
    long serial = 10;
    for (auto [cert_path, key_path, issuer, issuer_key] :
         {std::tuple{&server_cert, &server_key, ca_cert, ca_key}, std::tuple{&client_cert, &client_key, ca_cert, ca_key},
          std::tuple{&stranger_cert, &stranger_key, other_ca, other_ca_key}}) {
      EVP_PKEY* key = new_key();
      X509* cert = new_cert(key, "127.0.0.1", issuer, issuer_key, false, ++serial);
      write_pem(*cert_path, cert, nullptr);
      write_pem(*key_path, nullptr, key);
      X509_free(cert);
      EVP_PKEY_free(key);
    }
    X509_free(other_ca);
    EVP_PKEY_free(other_ca_key);
    X509_free(ca_cert);
    EVP_PKEY_free(ca_key);
  }
};

}  // namespace caesium::test
