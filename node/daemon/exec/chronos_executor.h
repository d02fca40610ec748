// The executor behind the built-in handler "chronos" (docs/chronos.md): a pop of a
// Chronos timer is `POST <uri>` with the opaque data as the body,
// `Content-Type: application/octet-stream` (as Chronos sends) and
// `X-Sequence-Number: <n>` (the invocation's 1-based sequence), within Chronos's
// 2-second callback limit.  The URI and opaque data come from the entry's payload
// (chronos.h), so every timer has its own callback; that is why this is not an ordinary
// configured http handler.  The X-Caesium-* headers of the http handler are sent too
// (Chronos clients ignore them; they name the fire id for deduplication).
//
// The runtime routes invocations whose handler is "chronos" here; a configured handler
// cannot take that name's place.
#pragma once

#include <memory>

#include "node/daemon/exec/executor.h"

struct uv_loop_s;

namespace caesium::daemon {

// The success or failure detail says which URI answered what.  2xx = success.
std::unique_ptr<Executor> make_chronos_executor(uv_loop_s* loop);

}  // namespace caesium::daemon
