#pragma once
// Rank topology: who this process is in the job, where it runs, and which device it uses.
// (Contract for the other layers; implemented in src/launch/.)
#include <mpi.h>

#include <string>

namespace autotrain {

struct Topology {
  int rank = 0;              // RANK
  int world_size = 1;        // WORLD_SIZE
  int local_rank = 0;        // LOCAL_RANK: index among the ranks on this node
  int local_world_size = 1;  // LOCAL_WORLD_SIZE
  int node_rank = 0;         // NODE_RANK: nodes ordered by their lowest rank
  int num_nodes = 1;
  std::string hostname;
  std::string master_addr;  // rank 0's address, broadcast
  int master_port = 29500;
  int device = -1;       // CUDA device index this rank is bound to; -1 = CPU
  int visible_gpus = 0;  // GPUs this rank can see
  std::string launcher;  // "mpirun (Open MPI)", "srun (Slurm)", "singleton", ...
};

}  // namespace autotrain
