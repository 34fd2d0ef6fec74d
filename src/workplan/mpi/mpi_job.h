// The ranks of an MPI job (`mpirun -np N scellis ...`) as a Collective. Built against MPI only when
// CMake finds it (SCELLIS_WITH_MPI); otherwise joining a job is refused with `no-mpi`.
#pragma once

#include <memory>

#include "workplan/collective.h"

namespace scellis::workplan {

// Whether this build can join an MPI job.
bool MpiAvailable();

// Initializes MPI and checks that the job has `ranks` processes (`rank-count-mismatch`
// otherwise). A collective that has not completed after `timeout_seconds` fails with
// `rank-lost`; a rank ended by the job (because another one failed or was killed) says so on
// stderr before it exits.
Result<std::unique_ptr<Collective>> JoinMpiJob(int ranks, double timeout_seconds);

}  // namespace scellis::workplan
