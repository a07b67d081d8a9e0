#include "test_pki.h"

#include "process.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include <fmt/format.h>

namespace gym::test {
namespace fs = std::filesystem;

const TestPki& test_pki(const std::string& name) {
  static const TestPki made = [&] {
    TestPki p;
    if (std::string(GYM_OPENSSL).find("NOTFOUND") != std::string::npos) {
      p.error = "the openssl CLI was not found at configure time; install it (scripts/setup.sh)";
      return p;
    }
    const fs::path dir =
        fs::path(build_path("tests/integration/" + name)) / std::to_string(::getpid());
    fs::remove_all(dir);
    fs::create_directories(dir);
    const auto at = [&](const char* file) { return (dir / file).string(); };
    std::ofstream(at("server.ext")) << "basicConstraints=CA:FALSE\n"
                                       "keyUsage=digitalSignature,keyEncipherment\n"
                                       "extendedKeyUsage=serverAuth\n"
                                       "subjectAltName=DNS:localhost,IP:127.0.0.1\n";
    std::ofstream(at("wrong.ext")) << "basicConstraints=CA:FALSE\n"
                                      "extendedKeyUsage=serverAuth\n"
                                      "subjectAltName=DNS:elsewhere.invalid\n";
    std::ofstream(at("client.ext")) << "basicConstraints=CA:FALSE\n"
                                       "keyUsage=digitalSignature\n"
                                       "extendedKeyUsage=clientAuth\n";
    const std::string openssl = GYM_OPENSSL;
    const std::string ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    const std::string ca_ext =
        "-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign";
    const std::vector<std::string> commands{
        fmt::format("'{}' req -x509 {} -keyout ca.key -out ca.pem -days 2 -subj "
                    "'/CN=gym-cpp test CA' {}",
                    openssl, ec, ca_ext),
        fmt::format("'{}' req -x509 {} -keyout other_ca.key -out other_ca.pem -days 2 -subj "
                    "'/CN=gym-cpp other CA' {}",
                    openssl, ec, ca_ext),
        fmt::format("'{}' req {} -keyout server.key -out server.csr -subj '/CN=localhost'", openssl,
                    ec),
        fmt::format("'{}' x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
                    "-days 2 -extfile server.ext -out server.pem",
                    openssl),
        fmt::format("'{}' req {} -keyout wrong.key -out wrong.csr -subj '/CN=elsewhere.invalid'",
                    openssl, ec),
        fmt::format("'{}' x509 -req -in wrong.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
                    "-days 2 -extfile wrong.ext -out wrong.pem",
                    openssl),
        fmt::format("'{}' req {} -keyout client.key -out client.csr -subj '/CN=gym-test-client'",
                    openssl, ec),
        fmt::format("'{}' x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
                    "-days 2 -extfile client.ext -out client.pem",
                    openssl),
        // The same subject, so that only the signing CA tells the two apart.
        fmt::format("'{}' req {} -keyout other_client.key -out other_client.csr "
                    "-subj '/CN=gym-test-client'",
                    openssl, ec),
        fmt::format("'{}' x509 -req -in other_client.csr -CA other_ca.pem -CAkey other_ca.key "
                    "-CAcreateserial -days 2 -extfile client.ext -out other_client.pem",
                    openssl),
    };
    for (const auto& command : commands) {
      const auto r = run_command("cd '" + dir.string() + "' && " + command + " 2>&1");
      if (r.code != 0) {
        p.error = "`" + command + "` failed: " + r.output;
        return p;
      }
    }
    p.ca = at("ca.pem");
    p.other_ca = at("other_ca.pem");
    p.key = at("server.key");
    p.cert = at("server.pem");
    p.wrong_key = at("wrong.key");
    p.wrong_cert = at("wrong.pem");
    p.client_key = at("client.key");
    p.client_cert = at("client.pem");
    p.other_client_key = at("other_client.key");
    p.other_client_cert = at("other_client.pem");
    return p;
  }();
  return made;
}

}  // namespace gym::test
