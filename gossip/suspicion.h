// Suspicion timing: the small pure functions of SWIM/Lifeguard's timing maths, and the
// per-suspect timer state of Lifeguard's dynamic suspicion timeout (Lifeguard §IV-B,
// "Local Health Aware Suspicion").
//
// A suspicion starts at its longest timeout `max_ms` and shrinks toward `min_ms` as
// independent members confirm it:
//
//     timeout(C) = max(min, max - (max - min) * log(C + 1) / log(K + 1))
//
// with C the confirmations seen so far and K the confirmations expected.  Confirmations
// are counted once per confirming member, and the member that started the suspicion
// (possibly ourselves) is not a confirmation: our own suspicion gossiped back to us must
// not speed up our own timer.  Once C reaches K the timeout is `min_ms` and further
// confirmations are not news.  With K = 0 (too few members to expect any) the timer
// stays at `max_ms`, as memberlist does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

namespace caesium::gossip {

// SWIM's suspicion timeout scaled by cluster size: mult * max(1, log10(n)) * interval.
// This is Lifeguard's `Min`, and the fixed timeout of plain SWIM (memberlist before
// Lifeguard used exactly this value).  `n` counts members including ourselves.
int64_t suspicion_timeout_min_ms(int suspicion_mult, size_t n, int64_t probe_interval_ms);

// How many times each update is piggybacked: mult * ceil(log10(n + 1)).  SWIM §4.1's
// lambda * log(n).
int retransmit_limit(int retransmit_mult, size_t n);

// The push-pull period, stretched once the cluster passes 32 members so full-state syncs
// do not saturate the network: interval * (ceil(log2(n) - log2(32)) + 1) above 32.
int64_t push_pull_interval_ms(int64_t base_interval_ms, size_t n);

// The Lifeguard formula above, floored to whole milliseconds and never below `min_ms`.
// REQUIRES: 0 <= min_ms <= max_ms, k >= 1, confirmations >= 0.
int64_t suspicion_timeout_ms(int confirmations, int k, int64_t min_ms, int64_t max_ms);

// One running suspicion timer.
//
// Invariants: confirmations() <= k; the originator is in the confirmed set but not
// counted; deadline_ms() = start + suspicion_timeout_ms(confirmations) (start + max when
// k == 0), so it never grows.
class Suspicion {
 public:
  // REQUIRES: 0 <= min_ms <= max_ms, k >= 0.
  Suspicion(std::string_view originator, int k, int64_t min_ms, int64_t max_ms, int64_t start_ms);

  // Records that `from` independently suspects the same member.  Returns true if this was
  // new information (a first confirmation from `from`, while fewer than k are known),
  // which is when the caller re-gossips the suspicion.
  bool confirm(std::string_view from);

  // When the suspect is to be declared dead, unless refuted first.
  int64_t deadline_ms() const;

  int confirmations() const { return confirmations_; }
  int expected_confirmations() const { return k_; }
  int64_t start_ms() const { return start_ms_; }

  void check_invariants() const;

 private:
  std::set<std::string, std::less<>> confirmed_;  // originator + every confirmer
  int confirmations_ = 0;
  int k_;
  int64_t min_ms_;
  int64_t max_ms_;
  int64_t start_ms_;
};

}  // namespace caesium::gossip
