// The dashboard's static files, built into the binary (see CMakeLists.txt here).  The
// API serves them at /ui/<name> without a token: they hold no data; the page asks the
// API for everything with the token the operator types in (kept in sessionStorage).
#pragma once

#include <string_view>
#include <vector>

namespace caesium::daemon {

struct UiAsset {
  std::string_view name;  // "index.html", "app.js", "app.css"
  std::string_view body;
};

// Every asset, by name (the generated ui_assets_data.cpp).
const std::vector<UiAsset>& ui_assets();

// The asset called `name`, or nullptr.
const UiAsset* find_ui_asset(std::string_view name);

// The Content-Type for an asset name, by its extension.
std::string_view ui_content_type(std::string_view name);

}  // namespace caesium::daemon
