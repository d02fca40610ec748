// Looking up the dashboard's built-in files (ui_assets.h).
#include "node/daemon/ui/ui_assets.h"

namespace caesium::daemon {

const UiAsset* find_ui_asset(std::string_view name) {
  for (const auto& a : ui_assets()) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

std::string_view ui_content_type(std::string_view name) {
  auto ends = [&](std::string_view ext) { return name.size() >= ext.size() && name.substr(name.size() - ext.size()) == ext; };
  if (ends(".html")) return "text/html; charset=utf-8";
  if (ends(".js")) return "text/javascript; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  if (ends(".svg")) return "image/svg+xml";
  if (ends(".png")) return "image/png";
  return "application/octet-stream";
}

}  // namespace caesium::daemon
