// Node core, part 5: agreeing on each epoch's cluster config before anyone adopts it.
//
// Two changes applied at once through two nodes used to give two configs of the same
// epoch, each adopted by the nodes it reached first, reported and never merged
// (docs/design.md §4) — and a volume whose sets differ between them could stall or fire under
// sets the cluster had left (swarm `--reconfig`: 10 of 1,000 seeds ended split).  Now
// the epoch's config is decided first, by single-decree Paxos among the nodes of the
// current config (epoch e decides e + 1; every proposer of e + 1 holds e, so they agree
// on who votes):
//
//   proposer                         acceptor (every node of config e, the proposer too)
//   PREPARE(e+1, b)           ->     promise b unless a higher ballot was promised; durable;
//                             <-     PROMISE naming the value accepted (if any), or NACK
//   with a majority of promises: the value is the highest-ballot one they named, else
//   the change asked for
//   ACCEPT(e+1, b, value)     ->     accept unless a higher ballot was promised; durable;
//                             <-     ACCEPTED, or NACK
//   with a majority of accepts the value is chosen: adopt it, send it to every node.
//
// A node only ever adopts a config a majority accepted (or one it received, which its
// sender adopted so), and majorities intersect, so one epoch never has two configs.
// An acceptor that already holds an epoch at or above the one asked about answers with
// its config document instead, which the proposer adopts.  The operator's change fails
// (409, field "epoch") when another value won the epoch, and (503, field "nodes") when
// no majority answered within kConfigVoteTimeoutMs.  docs/api.md, *How a change is
// agreed*.
#include <algorithm>

#include "base/bytes.h"
#include "node/core/node.h"

namespace caesium::node {
namespace {
constexpr std::string_view kConfigVoteKey = "c/vote";
constexpr uint8_t kConfigVoteFormat = 1;
}  // namespace

bool Node::config_node(const std::string& id) const {
  return std::any_of(config_.nodes.begin(), config_.nodes.end(), [&](const NodeSpec& n) { return n.id == id; });
}

std::string Node::encode_config_acceptor() const {
  ByteWriter w(64 + acceptor_.value.size());
  w.u8(kConfigVoteFormat);
  w.varint(acceptor_.epoch);
  w.varint(acceptor_.promised.number);
  w.str(acceptor_.promised.proposer);
  w.varint(acceptor_.accepted.number);
  w.str(acceptor_.accepted.proposer);
  w.str(acceptor_.value);
  return w.take();
}

Status Node::load_config_acceptor(std::string_view bytes) {
  ByteReader r(bytes);
  ConfigAcceptor a;
  const uint8_t format = r.u8();
  a.epoch = r.varint();
  a.promised.number = r.varint();
  a.promised.proposer = r.str();
  a.accepted.number = r.varint();
  a.accepted.proposer = r.str();
  a.value = r.str();
  if (!r.done() || format != kConfigVoteFormat) return Error("the data directory's config vote record is corrupt");
  acceptor_ = std::move(a);
  ballot_floor_ = std::max(ballot_floor_, acceptor_.promised.number);
  return Status::success();
}

std::optional<Status> Node::config_outcome(uint64_t id) const {
  if (proposal_ && proposal_->id == id) return std::nullopt;
  for (const auto& o : config_outcomes_) {
    if (o.id != id) continue;
    if (durable_seq_ < o.barrier) return std::nullopt;  // the adopted config is not on disk yet
    return o.status;
  }
  return Status(Error("config proposal " + std::to_string(id) + " is unknown (outcomes are kept for the last " +
                          std::to_string(kConfigOutcomesKept) + ")",
                      "epoch"));
}

uint64_t Node::start_config_proposal(std::string doc, Clock now) {
  ConfigProposal p;
  p.id = ++next_proposal_id_;
  p.epoch = config_.epoch + 1;
  p.ballot = Ballot{++ballot_floor_, options_.id};
  p.mine = std::move(doc);
  p.value = p.mine;
  p.started_mono_ms = now.mono_ms;
  proposal_ = std::move(p);
  send_config_votes(now);
  return proposal_->id;
}

// Sends the current phase's message to every node of the config that has not answered it.
void Node::send_config_votes(Clock now) {
  ConfigProposal& p = *proposal_;
  p.sent_mono_ms = now.mono_ms;
  wire::ConfigVote v;
  v.kind = p.accepting ? wire::ConfigVote::Kind::kAccept : wire::ConfigVote::Kind::kPrepare;
  v.epoch = p.epoch;
  v.ballot = p.ballot.number;
  v.proposer = p.ballot.proposer;
  if (p.accepting) v.document = p.value;
  for (const auto& n : config_.nodes) {
    if (!p.answered.count(n.id)) queue_core(n.id, v, false);
  }
}

void Node::on_config_vote(const std::string& from, const wire::ConfigVote& vote, Clock now) {
  switch (vote.kind) {
    case wire::ConfigVote::Kind::kPrepare:
    case wire::ConfigVote::Kind::kAccept:
      config_vote_as_acceptor(from, vote, now);
      break;
    default:
      config_vote_as_proposer(from, vote, now);
      break;
  }
}

void Node::config_vote_as_acceptor(const std::string& from, const wire::ConfigVote& vote, Clock now) {
  if (vote.epoch <= config_.epoch) {
    // Decided already: the proposer is behind, and adopts what we hold.
    queue_core(from, wire::ConfigDoc{config_.epoch, config_.encode()}, false);
    return;
  }
  if (vote.epoch > config_.epoch + 1) {
    // We are behind: we cannot vote on an epoch whose predecessor we have not seen.
    want_newer_config(from, vote.epoch - 1, now);
    return;
  }
  if (acceptor_.epoch != vote.epoch) acceptor_ = ConfigAcceptor{vote.epoch, {}, {}, {}};
  const Ballot b{vote.ballot, vote.proposer};
  ballot_floor_ = std::max(ballot_floor_, vote.ballot);
  wire::ConfigVote reply;
  reply.epoch = vote.epoch;
  reply.ballot = vote.ballot;
  reply.proposer = vote.proposer;
  const bool prepare = vote.kind == wire::ConfigVote::Kind::kPrepare;
  // At or above the ballot promised: the proposer's retransmission of a message whose
  // answer was lost is answered again, not refused.
  if (b >= acceptor_.promised) {
    if (!prepare) {
      auto doc = decode_cluster_config(vote.document);
      if (!doc || doc->epoch != vote.epoch) {
        ++counters_.malformed;
        return;
      }
      acceptor_.accepted = b;
      acceptor_.value = vote.document;
    }
    acceptor_.promised = b;
    storage_put(std::string(kConfigVoteKey), encode_config_acceptor());
    reply.kind = prepare ? wire::ConfigVote::Kind::kPromise : wire::ConfigVote::Kind::kAccepted;
    if (prepare && acceptor_.accepted.number != 0) {
      reply.accepted_ballot = acceptor_.accepted.number;
      reply.accepted_proposer = acceptor_.accepted.proposer;
      reply.document = acceptor_.value;
    }
  } else {
    ++counters_.config_votes_refused;
    reply.kind = wire::ConfigVote::Kind::kNack;
    reply.accepted_ballot = acceptor_.promised.number;
    reply.accepted_proposer = acceptor_.promised.proposer;
  }
  queue_core(from, std::move(reply), true);  // a vote is durable before it is sent
}

void Node::config_vote_as_proposer(const std::string& from, const wire::ConfigVote& vote, Clock now) {
  if (!proposal_) return;
  ConfigProposal& p = *proposal_;
  if (vote.epoch != p.epoch || Ballot{vote.ballot, vote.proposer} != p.ballot || !config_node(from)) return;
  if (vote.kind == wire::ConfigVote::Kind::kNack) {
    ballot_floor_ = std::max(ballot_floor_, vote.accepted_ballot);
    if (p.retry_mono_ms != 0) return;  // already backing off
    if (p.ballots >= kConfigMaxBallots) {
      end_config_proposal(Error("cluster config: another change of epoch " + std::to_string(p.epoch) +
                                    " is being agreed at the same time (through " + vote.accepted_proposer +
                                    "); yours was not applied: read the config (caesium config) and apply yours "
                                    "again on top of it",
                                "epoch"));
      return;
    }
    // Two proposers outbidding each other fall apart after a random pause.
    p.retry_mono_ms = now.mono_ms + rng_.between(50, 50 + 100 * p.ballots);
    return;
  }
  const bool promise = vote.kind == wire::ConfigVote::Kind::kPromise;
  if (promise == p.accepting || p.retry_mono_ms != 0) return;  // an answer to the other phase
  if (!p.answered.insert(from).second) return;
  if (promise && vote.accepted_ballot != 0) {
    const Ballot named{vote.accepted_ballot, vote.accepted_proposer};
    if (named > p.best) {
      p.best = named;
      p.best_value = vote.document;
    }
  }
  if (p.answered.size() < config_majority()) return;
  if (promise) {
    // A value a majority may have accepted under an earlier ballot must be the one we
    // propose: it may have been chosen.
    if (p.best.number != 0) p.value = p.best_value;
    p.accepting = true;
    p.answered.clear();
    send_config_votes(now);
  } else {
    config_chosen(p.value, now);
  }
}

void Node::config_proposal_tick(Clock now) {
  if (!proposal_) return;
  ConfigProposal& p = *proposal_;
  if (now.mono_ms - p.started_mono_ms >= kConfigVoteTimeoutMs) {
    end_config_proposal(Error("cluster config: fewer than a majority of the " + std::to_string(config_.nodes.size()) +
                                  " nodes answered within " + std::to_string(kConfigVoteTimeoutMs / 1000) +
                                  " s, so the change could not be agreed and was not applied; apply it again once "
                                  "they are reachable",
                              "nodes"));
    return;
  }
  if (p.retry_mono_ms != 0) {
    if (now.mono_ms < p.retry_mono_ms) return;
    // A new ballot above every one seen; phase 1 again.
    p.retry_mono_ms = 0;
    ++p.ballots;
    p.ballot = Ballot{++ballot_floor_, options_.id};
    p.accepting = false;
    p.answered.clear();
    p.best = {};
    p.best_value.clear();
    p.value = p.mine;
    send_config_votes(now);
    return;
  }
  if (now.mono_ms - p.sent_mono_ms >= kConfigVoteResendMs) send_config_votes(now);
}

void Node::config_chosen(std::string value, Clock now) {
  auto config = decode_cluster_config(value);
  if (!config || config->epoch != proposal_->epoch) {
    // Only a document that decoded with this epoch was ever accepted (by us, too).
    end_config_proposal(Error("cluster config: the agreed config does not decode", "epoch"));
    return;
  }
  const std::vector<NodeSpec> before = config_.nodes;
  // adopt_config ends the proposal: ours if the value is what we asked for.
  if (Status s = adopt_config(std::move(*config), now, true); !s.ok() && proposal_) end_config_proposal(s);
  // Tell every node at once, old and new (gossip would bring it within seconds).
  std::set<std::string> to;
  for (const auto& n : before) to.insert(n.id);
  for (const auto& n : config_.nodes) to.insert(n.id);
  to.erase(options_.id);
  for (const auto& n : to) queue_core(n, wire::ConfigDoc{config_.epoch, config_.encode()}, false);
}

void Node::end_config_proposal(Status outcome) {
  if (!proposal_) return;
  ++(outcome.ok() ? counters_.config_agreed : counters_.config_not_agreed);
  NodeEvent e;
  e.kind = NodeEvent::Kind::kConfig;
  e.text = "cluster config change for epoch " + std::to_string(proposal_->epoch) +
           (outcome.ok() ? " agreed" : " not applied: " + outcome.error().message);
  events_.push_back(std::move(e));
  config_outcomes_.push_back(ConfigOutcome{proposal_->id, std::move(outcome), write_barrier()});
  if (config_outcomes_.size() > kConfigOutcomesKept) config_outcomes_.pop_front();
  proposal_.reset();
}

}  // namespace caesium::node
