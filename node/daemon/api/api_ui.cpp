// ApiHandler, part 4: the dashboard's static files (node/daemon/ui/).  No token: the
// files hold no data.  The headers keep the page to its own origin: scripts, styles and
// requests only from this node (no inline script, no CDN), never framed.
#include "node/daemon/api/api.h"
#include "node/daemon/api/api_internal.h"
#include "node/daemon/ui/ui_assets.h"

namespace caesium::daemon {

using namespace api_detail;

ApiAction ApiHandler::route_ui(const ServerRequest& req, const std::vector<std::string>& seg) {
  if (req.method != "GET") return method_not_allowed("GET");
  // "/" and "/ui" lead to the page; its relative links then resolve under /ui/.
  if (seg.size() == 1) return respond(location_response(302, "/ui/"));
  const std::string name = seg.size() == 2 && seg[1].empty() ? "index.html" : seg.size() == 2 ? seg[1] : "";
  const UiAsset* asset = find_ui_asset(name);
  if (asset == nullptr) return respond(error_response(404, "no such dashboard file: " + req.path, "path"));
  ServerResponse r;
  r.content_type = std::string(ui_content_type(asset->name));
  r.body = std::string(asset->body);
  r.headers.emplace_back("Cache-Control", "no-cache");
  r.headers.emplace_back("X-Content-Type-Options", "nosniff");
  r.headers.emplace_back("X-Frame-Options", "DENY");
  r.headers.emplace_back("Referrer-Policy", "no-referrer");
  r.headers.emplace_back("Content-Security-Policy",
                         "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                         "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'");
  return respond(std::move(r));
}

}  // namespace caesium::daemon
