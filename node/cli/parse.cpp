#include "node/cli/parse.h"

#include <algorithm>
#include <charconv>
#include <limits>

#include "base/time.h"

namespace caesium::cli {
namespace {

// The command the parser was in when it stopped: the last subcommand it entered.
const CLI::App& deepest(const CLI::App& app) {
  const CLI::App* a = &app;
  while (!a->get_subcommands().empty()) a = a->get_subcommands().front();
  return *a;
}

std::string after(const std::string& text, const std::string& marker) {
  const size_t at = text.find(marker);
  return at == std::string::npos ? std::string() : text.substr(at + marker.size());
}

std::string first_word(const std::string& text) { return text.substr(0, text.find(' ')); }

std::string subcommand_names(const CLI::App& app) {
  std::string names;
  for (const CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (!names.empty()) names += ", ";
    names += s->get_name();
  }
  return names;
}

// CLI11's message for `e`, said the way the rest of Caesium says it.  CLI11's own text is
// the fallback for the errors a command line rarely meets.
std::string describe(const CLI::Error& e, const CLI::App& at) {
  const std::string what = e.what();
  // By type, not by get_name(): CLI11 names some errors after the command they occur in.
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
    // An unknown option first: the words after it may be its value.
    const auto rest = at.remaining();
    const auto option = std::find_if(rest.begin(), rest.end(), [](const std::string& w) { return w.rfind('-', 0) == 0; });
    if (option != rest.end()) return "unknown option '" + option->substr(0, option->find('=')) + "'";
    const std::string word = rest.empty() ? first_word(after(what, "expected: ")) : rest.front();
    if (!at.get_subcommands([](const CLI::App*) { return true; }).empty()) return "unknown command '" + word + "'";
    return "unexpected argument '" + word + "'";
  }
  if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr) {
    if (what == "A subcommand is required") {
      const auto rest = at.remaining();
      if (!rest.empty()) return "unknown command '" + rest.front() + "'";
      return "a command is required (" + subcommand_names(at) + ")";
    }
    const std::string missing = what.substr(0, what.rfind(" is required"));
    if (missing.rfind('-', 0) != 0 && missing.find(' ') == std::string::npos) return "missing " + missing;
    return what;
  }
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr) {
    const std::string option = what.substr(0, what.find(": "));
    if (what.find(" required ") != std::string::npos && what.find(" missing") != std::string::npos) {
      return option + " needs a value";
    }
    if (what.find(": At Most 1 required") != std::string::npos) return option + " is given twice";
    if (what.find(" was given a disallowed flag override") != std::string::npos) {
      const std::string flag = what.substr(0, what.find(" was given"));
      return (flag.rfind('-', 0) == 0 ? flag : "--" + flag) + " takes no value";
    }
  }
  if (dynamic_cast<const CLI::ConversionError*>(&e) != nullptr) {
    const std::string rest = after(what, "Could not convert: ");
    const size_t eq = rest.find(" = ");
    if (eq != std::string::npos) return rest.substr(0, eq) + ": '" + rest.substr(eq + 3) + "' is not a valid value";
  }
  return what;
}

}  // namespace

std::string command_path(const CLI::App& command) {
  std::string path = command.get_name();
  for (const CLI::App* a = command.get_parent(); a != nullptr; a = a->get_parent()) path = a->get_name() + " " + path;
  return path;
}

int usage_error(const CLI::App& command, const std::string& message, std::ostream& err) {
  const std::string path = command_path(command);
  err << path << ": " << message << "\nrun '" << path << " --help' for usage\n";
  return 2;
}

std::optional<int> parse_command_line(CLI::App& app, const std::vector<std::string>& args, std::ostream& out,
                                      std::ostream& err) {
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last first
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e, out, err);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e, out, err);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e, out, err);
  } catch (const CLI::Error& e) {
    const CLI::App& at = deepest(app);
    return usage_error(at, describe(e, at), err);
  }
  return std::nullopt;
}

CLI::Option* add_switch(CLI::App& app, const std::string& name, const std::string& help, bool* value) {
  CLI::Option* o = value != nullptr ? app.add_flag(name, *value, help) : app.add_flag(name, help);
  return o->disable_flag_override();
}

CLI::Validator checked_by(std::function<Status(const std::string&)> check) {
  return CLI::Validator(
      [check = std::move(check)](std::string& value) -> std::string {
        Status s = check(value);
        return s.ok() ? std::string() : s.error().message;
      },
      std::string());
}

CLI::Validator whole_number(int64_t min, int64_t max) {
  return checked_by(
      [min, max](const std::string& text) -> Status {
        int64_t v = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (ec != std::errc() || end != text.data() + text.size() || v < min || v > max) {
          const bool low = min != std::numeric_limits<int64_t>::min();
          const bool high = max != std::numeric_limits<int64_t>::max();
          const std::string range = low && high ? " from " + std::to_string(min) + " to " + std::to_string(max)
                                    : low       ? " of at least " + std::to_string(min)
                                    : high      ? " of at most " + std::to_string(max)
                                                : std::string();
          return Error("'" + text + "' is not a whole number" + range);
        }
        return Status::success();
      });
}

CLI::Validator duration_at_least(int64_t min_ms) {
  return checked_by(
      [min_ms](const std::string& text) -> Status {
        auto d = parse_duration_ms(text);
        if (!d.ok()) return d.error();
        if (*d < min_ms) return Error("must be at least " + format_duration_ms(min_ms));
        return Status::success();
      });
}

}  // namespace caesium::cli
