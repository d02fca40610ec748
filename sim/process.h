// What the simulator drives: one node process.  The real implementation wraps the
// sans-IO Node core (sim/node_process.*); tests of the simulator itself may use small
// test processes.  A crash destroys the Process; a restart creates a new one from the
// factory and hands it what survived on its simulated disk.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "node/core/io.h"

namespace caesium::sim {

using node::Channel;
using node::Clock;
using node::Invocation;
using node::InvocationResult;
using node::StorageBatch;
using node::StoredRecord;
using node::Transmit;

// Something a process reports for the simulator's report and checker; not protocol
// traffic.  Membership view changes feed detection/dissemination/false-positive figures.
struct Observation {
  enum class Kind : uint8_t {
    kMemberState = 0,  // observer's view of `subject` changed to `state`
    kMaster = 1,       // observer now considers `subject` master of `volume` ("" = none)
    kNote = 2,         // free text for the trace (e.g. "withheld o=...")
  };
  Kind kind = Kind::kMemberState;
  std::string subject;
  std::string volume;
  int state = 0;  // gossip::MemberState as int for kMemberState
  uint64_t incarnation = 0;
  std::string text;
};

class Process {
 public:
  virtual ~Process() = default;

  // Start with what the simulated disk holds (empty: a fresh or wiped disk).
  virtual void start(std::vector<StoredRecord> disk, Clock now) = 0;
  // Graceful leave requested (the scenario's `leave` fault).
  virtual void leave(Clock now) = 0;

  virtual void on_datagram(const std::string& from_addr, const std::string& bytes, Clock now) = 0;
  virtual void on_stream(const std::string& from_addr, const std::string& bytes, Clock now) = 0;
  virtual void on_tick(Clock now) = 0;
  virtual void on_durable(uint64_t seq, Clock now) = 0;
  virtual void on_invocation_done(const InvocationResult& result, Clock now) = 0;

  // The monotonic instant at which the process wants on_tick (kNever: no need).
  virtual int64_t next_deadline_mono() const = 0;

  virtual bool poll_transmit(Transmit& out) = 0;
  virtual bool poll_storage(StorageBatch& out) = 0;
  virtual bool poll_invocation(Invocation& out) = 0;
  virtual bool poll_observation(Observation& out) = 0;
};

}  // namespace caesium::sim
