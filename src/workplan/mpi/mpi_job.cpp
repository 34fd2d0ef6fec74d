#include "workplan/mpi/mpi_job.h"

#ifdef SCELLIS_WITH_MPI
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#endif

namespace scellis::workplan {

#ifndef SCELLIS_WITH_MPI

bool MpiAvailable() {
  return false;
}

Result<std::unique_ptr<Collective>> JoinMpiJob(int ranks, double timeout_seconds) {
  return UserError("no-mpi", "",
                   "--ranks=" + std::to_string(ranks) + " needs MPI, and this build has none",
                   "install OpenMPI (openmpi-bin libopenmpi-dev) and build again");
}

#else

bool MpiAvailable() {
  return true;
}

namespace {

// What a rank says when the job ends it (SIGTERM from mpirun after another rank failed or was
// killed), written with async-signal-safe calls only.
char g_ended_message[160];
size_t g_ended_length = 0;

extern "C" void OnJobEnded(int) {
  ssize_t unused = write(STDERR_FILENO, g_ended_message, g_ended_length);
  (void)unused;
  _exit(143);
}

class MpiJob final : public Collective {
 public:
  MpiJob(int rank, int size, bool owns_mpi, double timeout)
      : rank_(rank), size_(size), owns_mpi_(owns_mpi), timeout_(timeout) {}
  ~MpiJob() override {
    if (owns_mpi_) MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  Result<std::vector<float>> AllGather(std::span<const float> mine,
                                       const std::vector<int64_t>& counts) override {
    return Collect(mine, counts, /*everyone=*/true, "the gradients' all-gather");
  }

  Result<std::vector<float>> Gather(std::span<const float> mine,
                                    const std::vector<int64_t>& counts) override {
    return Collect(mine, counts, /*everyone=*/false, "the gather of the output's blocks");
  }

  [[noreturn]] void Abort(const Diagnostic& cause) override {
    std::fprintf(stderr, "rank %d of %d failed, stopping every rank:\n%s\n", rank_, size_,
                 cause.Format().c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, ExitCodeFor(cause));
    std::_Exit(ExitCodeFor(cause));  // MPI_Abort does not return; in case it does
  }

 private:
  // Every rank's share in rank order, on every rank (everyone) or on rank 0 only.
  Result<std::vector<float>> Collect(std::span<const float> mine,
                                     const std::vector<int64_t>& counts, bool everyone,
                                     const std::string& what) {
    std::vector<int> sizes(counts.size()), offsets(counts.size());
    int64_t total = 0;
    for (size_t r = 0; r < counts.size(); ++r) {
      if (counts[r] > INT_MAX || total > INT_MAX)
        return RuntimeError("collective-too-large", "a collective of " + std::to_string(total) +
                                                        " floats is beyond one MPI call's count");
      sizes[r] = static_cast<int>(counts[r]);
      offsets[r] = static_cast<int>(total);
      total += counts[r];
    }
    if (static_cast<int64_t>(mine.size()) != counts[rank_])
      return InternalError("workplan.Collect", "this rank's share is not the count planned");
    const bool receives = everyone || rank_ == 0;
    std::vector<float> all(receives ? static_cast<size_t>(total) : 0);
    MPI_Request request;
    int rc = everyone
                 ? MPI_Iallgatherv(mine.data(), sizes[rank_], MPI_FLOAT, all.data(), sizes.data(),
                                   offsets.data(), MPI_FLOAT, MPI_COMM_WORLD, &request)
                 : MPI_Igatherv(mine.data(), sizes[rank_], MPI_FLOAT, all.data(), sizes.data(),
                                offsets.data(), MPI_FLOAT, 0, MPI_COMM_WORLD, &request);
    if (rc != MPI_SUCCESS) return Failed(what + " could not start", rc);
    // Bounded: a rank that never arrives (hung, or lost where MPI does not notice) ends the wait.
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_);
    for (int done = 0;;) {
      rc = MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS) return Failed(what + " failed", rc);
      if (done) break;
      if (std::chrono::steady_clock::now() > deadline) {
        return RuntimeError("rank-lost", "rank " + std::to_string(rank_) + " waited " +
                                             std::to_string(static_cast<int>(timeout_)) +
                                             " s for " + what + "; another rank stopped or hangs");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    return all;
  }

  Diagnostic Failed(const std::string& what, int rc) const {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(rc, text, &length);
    return RuntimeError("rank-lost", "rank " + std::to_string(rank_) + ": " + what + " (" +
                                         std::string(text, static_cast<size_t>(length)) + ")");
  }

  int rank_, size_;
  bool owns_mpi_;
  double timeout_;
};

}  // namespace

Result<std::unique_ptr<Collective>> JoinMpiJob(int ranks, double timeout_seconds) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized && MPI_Init(nullptr, nullptr) != MPI_SUCCESS)
    return RuntimeError("mpi-init-failed", "MPI could not be initialized");
  // Errors come back as codes, to be named, rather than ending the job unexplained.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  auto job = std::make_unique<MpiJob>(rank, size, !initialized, timeout_seconds);
  if (size != ranks) {
    return UserError("rank-count-mismatch", "",
                     "--ranks=" + std::to_string(ranks) + " but the job has " +
                         std::to_string(size) + " process" + (size == 1 ? "" : "es"),
                     "launch it with mpirun -np " + std::to_string(ranks));
  }
  std::snprintf(g_ended_message, sizeof g_ended_message,
                "rank %d of %d: error[job-ended]: the MPI job ended this rank (another rank "
                "failed or was killed)\n",
                rank, size);
  g_ended_length = std::strlen(g_ended_message);
  std::signal(SIGTERM, OnJobEnded);
  return std::unique_ptr<Collective>(std::move(job));
}

#endif

}  // namespace scellis::workplan
