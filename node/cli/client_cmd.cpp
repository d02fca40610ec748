// The client commands of `caesium` (put, get, ls, rm, history, status, config get|apply):
// their options, here; what they do, in client.h.  docs/cli.md is the user reference.
#include <memory>
#include <string>
#include <vector>

#include "node/cli/commands.h"
#include "node/cli/parse.h"

namespace caesium::cli {
namespace {

struct ValueOption {
  const char* name;
  const char* type;
  const char* help;
};

// The options every client command takes (docs/cli.md, "Which node, which token").
void add_common_options(CLI::App& c) {
  c.add_option("--api", "the node's API: HOST:PORT or a URL (else $CAESIUM_API, else --config's api.listen)")
      ->type_name("HOST:PORT");
  c.add_option("--token-file", "the API token (else $CAESIUM_TOKEN, else --config's api.token_file)")
      ->type_name("FILE");
  c.add_option("--config", "a node's config file, for its API address and token")->type_name("NODE.toml");
  c.add_option("--ca-file", "https: the CA to verify the node with (else $CAESIUM_CA_FILE, else --config's api.tls_ca)")
      ->type_name("FILE");
  c.add_option("--cert-file", "https: a client certificate, for nodes that verify clients")->type_name("FILE");
  c.add_option("--key-file", "https: the client certificate's key")->type_name("FILE");
  c.add_option("--timeout", "give up on the API after this long (default 30s)")
      ->type_name("DURATION")
      ->check(duration_at_least(1));
  add_switch(c, "--json", "print the API's JSON as it came");
}

const ValueOption kEntryFields[] = {
    {"--file", "FILE", "the entry as a JSON document (- for stdin)"},
    {"--data", "JSON", "the entry as a JSON document given here"},
    {"--cron", "EXPR", "cron expression (docs/cron.md)"},
    {"--tz", "ZONE", "the cron expression's time zone"},
    {"--jitter", "DURATION", "random delay up to this much"},
    {"--at", "RFC3339", "a timer at this instant"},
    {"--after", "DURATION", "a timer this long after now"},
    {"--interval", "DURATION", "a repeating timer"},
    {"--repeat-for", "DURATION", "with --interval: for this long"},
    {"--count", "N", "with --interval: this many times"},
    {"--handler", "NAME", "the handler to run (docs/handlers.md)"},
    {"--semantics", "S", "at_least_once or at_most_once"},
    {"--misfire", "POLICY", "skip, fire_once or fire_all"},
    {"--misfire-window", "DURATION", "how late a missed occurrence may still run"},
    {"--accept-timeout", "DURATION", "how long a worker may take to accept"},
    {"--complete-time", "DURATION", "how long a run may take before it counts as lost"},
    {"--payload", "TEXT", "the payload handed to the handler"},
    {"--payload-file", "FILE", "the payload from a file (- for stdin)"},
    {"--run-timeout", "DURATION", "stop a run that takes longer (the entry's timeout)"},
    {"--not-before", "RFC3339", "no occurrence before this instant"},
    {"--not-after", "RFC3339", "no occurrence after this instant"},
    {"--overlap", "POLICY", "allow, forbid or replace: what an occurrence due while the last run runs does"},
    {"--retry-attempts", "N", "runs in all after definite failures, the first included (1..100; 1 = no retry)"},
    {"--retry-backoff", "DURATION", "wait before the first retry, doubled before each further one (default 1s)"},
    {"--retry-max-backoff", "DURATION", "the doubling stops here (default 1m)"},
    {"--retry-jitter", "FRACTION", "shorten each wait by up to this fraction, 0 to 1 (default 0)"},
    {"--on-failure", "NAME", "a handler run once when an occurrence's last run fails"},
};

// The arguments as given, by option name, for client.h.
ClientArgs args_of(const CLI::App& c) {
  ClientArgs a;
  for (const CLI::Option* o : c.get_options()) {
    if (o->count() == 0 || o->get_name() == "--help") continue;
    if (o->get_positional()) {
      for (const auto& v : o->results()) a.positionals.push_back(v);
    } else if (o->get_items_expected_max() == 0) {
      a.switches.insert(o->get_name());
    } else {
      a.values[o->get_name()] = o->results();
    }
  }
  return a;
}

// Positionals are bound to storage the option keeps itself; ClientArgs reads them back in
// the order they were declared.
void add_positionals(CLI::App& c, std::initializer_list<const char*> names) {
  for (const char* n : names) c.add_option(n, "")->required();
}

// Runs `command` with the arguments given to `c` (and to `c`'s parent `also`, when set),
// unless a subcommand of `c` was chosen: that one runs instead (a subcommand's callback
// runs before its parent's).
void run_on_parse(CLI::App* c, const std::string& command, Io& io, int& exit_code, CLI::App* also = nullptr) {
  c->callback([c, command, also, &io, &exit_code] {
    if (!c->get_subcommands().empty()) return;
    ClientArgs a = args_of(*c);
    if (also != nullptr) {
      ClientArgs outer = args_of(*also);
      outer.positionals = a.positionals;
      outer.switches.insert(a.switches.begin(), a.switches.end());
      for (auto& [name, values] : a.values) outer.values[name] = values;
      a = std::move(outer);
    }
    exit_code = run_client_command(command, a, io.out, io.err, io.env, io.connect,
                                   [c, &io](const std::string& message) { return usage_error(*c, message, io.err); });
  });
}

CLI::App* add_client(CLI::App& root, const char* name, const char* help, Io& io, int& exit_code) {
  CLI::App* c = root.add_subcommand(name, help);
  add_common_options(*c);
  run_on_parse(c, name, io, exit_code);
  return c;
}

}  // namespace

void add_client_commands(CLI::App& root, Io& io, int& exit_code) {
  CLI::App* put = add_client(root, "put", "create or replace an entry", io, exit_code);
  add_positionals(*put, {"VOLUME", "ENTITY", "NAME"});
  for (const auto& f : kEntryFields) put->add_option(f.name, f.help)->type_name(f.type);
  put->add_option("--bind", "run only on this node, or on nodes with tag T (repeatable)")
      ->type_name("NODE|tag:T")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  add_switch(*put, "--prefer-origin", "run on the node that took the write when it can");
  add_switch(*put, "--paused", "create it paused (caesium resume starts it)");
  put->add_option("--w", "answer once N replicas hold the write")->type_name("N");
  put->footer("Give the entry with --file or --data, or with the field options (docs/entries.md).");

  CLI::App* get = add_client(root, "get", "show an entry", io, exit_code);
  add_positionals(*get, {"VOLUME", "ENTITY", "NAME"});

  CLI::App* ls = add_client(root, "ls", "list a volume's entries", io, exit_code);
  add_positionals(*ls, {"VOLUME"});
  ls->add_option("--prefix", "only entities starting with this")->type_name("ENTITY-PREFIX");
  ls->add_option("--limit", "entries per page (default 100, at most 1000)")->type_name("N");
  ls->add_option("--after", "start after this key")->type_name("KEY");
  add_switch(*ls, "--all", "follow the pages to the end");

  CLI::App* rm = add_client(root, "rm", "delete an entry", io, exit_code);
  add_positionals(*rm, {"VOLUME", "ENTITY", "NAME"});
  rm->add_option("--w", "answer once N replicas hold the delete")->type_name("N");

  for (const auto& [verb, help] : {std::pair{"pause", "pause an entry, or every entry under a prefix: nothing new of it runs"},
                                   std::pair{"resume", "resume a paused entry, or every entry under a prefix"}}) {
    CLI::App* c = add_client(root, verb, help, io, exit_code);
    // VOLUME ENTITY NAME: one entry; VOLUME --prefix P or VOLUME ENTITY --name-prefix N:
    // every entry under the prefix (client.cpp checks which form was given).
    c->add_option("VOLUME", "")->required();
    c->add_option("ENTITY", "");
    c->add_option("NAME", "");
    c->add_option("--prefix", "every entry of the entities starting with this")->type_name("ENTITY-PREFIX");
    c->add_option("--name-prefix", "with ENTITY: every entry of it whose name starts with this")->type_name("NAME-PREFIX");
    c->add_option("--w", "answer once N replicas hold the change")->type_name("N");
  }

  CLI::App* trigger = add_client(root, "trigger", "run an entry now: one manual occurrence, claimed as any", io,
                                 exit_code);
  add_positionals(*trigger, {"VOLUME", "ENTITY", "NAME"});
  trigger->add_option("--w", "answer once N replicas hold the trigger")->type_name("N");
  trigger->add_option("--idempotency-key", "a retry with the same key runs nothing more")->type_name("KEY");

  CLI::App* history = add_client(root, "history", "an entry's recent occurrences", io, exit_code);
  add_positionals(*history, {"VOLUME", "ENTITY", "NAME"});
  history->add_option("--limit", "how many occurrences")->type_name("N");

  add_client(root, "status", "this node's view: members, volumes, masters", io, exit_code);

  // `caesium config` alone is `config get`.  The options given before `get` or `apply`
  // belong to `config`, those after to the subcommand, which passes what it does not know
  // up (fallthrough): both orders work.
  CLI::App* config = add_client(root, "config", "show or change the cluster config", io, exit_code);
  config->require_subcommand(0, 1);
  CLI::App* config_get = config->add_subcommand("get", "show the cluster config (the default)");
  CLI::App* config_apply = config->add_subcommand("apply", "send a new cluster config (JSON, a higher epoch)");
  add_positionals(*config_apply, {"FILE"});
  add_switch(*config_apply, "--force", "apply although a replica lags or the nodes' majority is not alive");
  for (CLI::App* sub : {config_get, config_apply}) {
    sub->fallthrough();
    run_on_parse(sub, "config " + sub->get_name(), io, exit_code, config);
  }
}

}  // namespace caesium::cli
