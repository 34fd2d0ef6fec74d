// The collectives a WorkPlan's steps need, behind one interface: one process alone, or the ranks
// of an MPI job (workplan/mpi/). Host buffers only: a rank's gradients are read back from its
// device before they are sent.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/result.h"

namespace scellis::workplan {

class Collective {
 public:
  virtual ~Collective() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Every rank's `mine` concatenated in rank order, on every rank; `counts[r]` is how many floats
  // rank r sends. A rank that stopped makes this fail (or the job end) within the timeout, never
  // wait forever: `rank-lost`.
  virtual Result<std::vector<float>> AllGather(std::span<const float> mine,
                                               const std::vector<int64_t>& counts) = 0;
  // Every rank's `mine` concatenated in rank order, on rank 0 only (the others get nothing back);
  // `counts` as for AllGather, and bounded by the same timeout.
  virtual Result<std::vector<float>> Gather(std::span<const float> mine,
                                            const std::vector<int64_t>& counts) = 0;
  // Ends the run on every rank: writes the cause, named with this rank, to stderr and stops the
  // job. Used when this rank failed while others may be waiting for it.
  [[noreturn]] virtual void Abort(const Diagnostic& cause) = 0;
};

// One rank, alone: the all-gather returns `mine`.
std::unique_ptr<Collective> SingleProcess();

}  // namespace scellis::workplan
