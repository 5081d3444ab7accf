#pragma once
// One run per project folder: two runs writing the same project interleave metrics.jsonl and
// delete each other's temporary files. Rank 0 holds an flock on <project>/.lock for the run's
// lifetime (the kernel drops it when the process ends, however it ends); the file names the
// holder's host and pid so a refused run can say who has it.
#include <mpi.h>

#include <filesystem>

namespace autotrain::train {

class ProjectLock {
 public:
  // Collective over `comm`: rank 0 takes the lock, creating the folder if needed; when another
  // process holds it, every rank throws the same CollectiveError naming the holder.
  ProjectLock(const std::filesystem::path& project, MPI_Comm comm);
  ~ProjectLock();
  ProjectLock(const ProjectLock&) = delete;
  ProjectLock& operator=(const ProjectLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace autotrain::train
