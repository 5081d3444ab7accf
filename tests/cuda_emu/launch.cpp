// Kernel launches of the CUDA emulator. A launch is queued on its stream; when it runs, each
// block runs on its own, its CUDA threads as fibers of the one calling OS thread. A
// fiber runs until it finishes or waits at a barrier (__syncthreads, __syncwarp, a shuffle);
// a barrier opens when every live thread it names waits there. A warp barrier that names a
// lane that already exited, or threads that wait at different barriers for ever, stop the
// process: on a GPU both are undefined behaviour or a hang.
// A GPU runs a grid's blocks in no promised order and its shared memory starts as whatever the
// last block left there, so blocks run in reverse order too (AUTOTRAIN_CUDA_EMU_ORDER=reverse:
// a block that reads another block's output of the same launch shows), and every block's static
// and dynamic shared memory starts as all-ones bytes (NaN in fp32, bf16 and fp16, as cudaMalloc'd
// memory here), so a read of shared memory nobody wrote shows.
// prelude.hpp first: it defines __shared__ before the CUDA headers do.
#include <sys/mman.h>
#include <ucontext.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "emulator.hpp"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
// A fiber that never returns leaves its frames' redzones poisoned on its stack; a fresh fiber
// on the same stack must start from clean shadow memory.
#define AT_EMU_UNPOISON(p, n) __asan_unpoison_memory_region((p), (n))
#else
#define AT_EMU_UNPOISON(p, n) ((void)(p), (void)(n))
#endif
#include "prelude.hpp"

uint3 threadIdx;
uint3 blockIdx;
dim3 blockDim;
dim3 gridDim;

namespace cuda_emu {
namespace {

constexpr std::size_t kStackBytes = std::size_t{256} << 10;
constexpr int kMaxThreads = 1024;
constexpr int kWarpSize = 32;

enum class FiberState { ready, at_block_barrier, at_warp_barrier, done };

// Switching fibers: on x86-64 a few instructions (callee-saved registers and the stack pointer;
// ucontext's swapcontext makes a system call per switch, which made the emulator 5x slower);
// elsewhere ucontext.
#if defined(__x86_64__)
extern "C" void cuda_emu_switch(void** save_sp, void* load_sp);
asm(R"(
  .text
  .globl cuda_emu_switch
  .type cuda_emu_switch, @function
cuda_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $16, %rsp
  stmxcsr 8(%rsp)
  fnstcw (%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr 8(%rsp)
  fldcw (%rsp)
  addq $16, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size cuda_emu_switch, .-cuda_emu_switch
)");

struct Context {
  void* sp = nullptr;
};
void start_context(Context& c, unsigned char* stack, std::size_t bytes, void (*entry)()) {
  // Top of the stack, 16-aligned: a fake return address for entry, entry itself (the switch's
  // `ret` target), six callee-saved registers, then the x87 control word and MXCSR.
  auto top = reinterpret_cast<std::uintptr_t>(stack + bytes) & ~std::uintptr_t{15};
  auto* slots = reinterpret_cast<std::uint64_t*>(top);
  slots[-1] = 0;
  slots[-2] = reinterpret_cast<std::uint64_t>(entry);
  for (int i = 3; i <= 8; ++i) slots[-i] = 0;
  auto* control = reinterpret_cast<unsigned char*>(&slots[-10]);
  std::uint32_t mxcsr = 0;
  std::uint16_t fpu = 0;
  asm volatile("stmxcsr %0" : "=m"(mxcsr));
  asm volatile("fnstcw %0" : "=m"(fpu));
  std::memcpy(control, &fpu, sizeof fpu);
  std::memcpy(control + 8, &mxcsr, sizeof mxcsr);
  c.sp = control;
}
void switch_context(Context& from, Context& to) {
  cuda_emu_switch(&from.sp, to.sp);
}
#else
struct Context {
  ucontext_t context{};
};
void start_context(Context& c, unsigned char* stack, std::size_t bytes, void (*entry)()) {
  getcontext(&c.context);
  c.context.uc_stack.ss_sp = stack;
  c.context.uc_stack.ss_size = bytes;
  c.context.uc_link = nullptr;
  makecontext(&c.context, entry, 0);
}
void switch_context(Context& from, Context& to) {
  swapcontext(&from.context, &to.context);
}
#endif

struct Fiber {
  Context context;
  FiberState state = FiberState::ready;
  unsigned mask = 0;           // lanes named by the warp barrier it waits at
  std::uint64_t exchange = 0;  // the value it publishes to a shuffle
};

struct Block {
  const char* kernel = "";
  unsigned threads = 0;
  std::vector<Fiber> fibers;
  std::vector<unsigned char> dynamic_shared;
  std::vector<void*> poisoned_static_shared;  // static __shared__ arrays filled in this block
  const std::function<void()>* body = nullptr;
  Context scheduler;
  int current = -1;
  unsigned char* stacks = nullptr;
};

Block& block() {
  static Block b;
  return b;
}

unsigned char* stacks() {
  static unsigned char* memory = [] {
    void* p = mmap(nullptr, kStackBytes * kMaxThreads, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) fail("cannot map fiber stacks");
    return static_cast<unsigned char*>(p);
  }();
  return memory;
}

// The order ready threads run in between barriers, and blocks in a grid. A GPU gives none;
// running the same kernels in both orders (AUTOTRAIN_CUDA_EMU_ORDER=reverse,
// scripts/test-cuda-emulated.sh) shows a read that depends on another thread's write without a
// barrier between them, or on another block's write in the same launch.
bool reverse_order() {
  static const bool reverse = [] {
    const char* value = std::getenv("AUTOTRAIN_CUDA_EMU_ORDER");
    const std::string order = value == nullptr ? "" : value;
    if (order != "" && order != "forward" && order != "reverse")
      fail("AUTOTRAIN_CUDA_EMU_ORDER = '" + order + "': expected forward or reverse");
    return order == "reverse";
  }();
  return reverse;
}

void set_thread_index(unsigned linear) {
  threadIdx.x = linear % blockDim.x;
  threadIdx.y = (linear / blockDim.x) % blockDim.y;
  threadIdx.z = linear / (blockDim.x * blockDim.y);
}

[[noreturn]] void fiber_main() {
  Block& b = block();
  (*b.body)();
  Fiber& f = b.fibers[b.current];
  f.state = FiberState::done;
  switch_context(f.context, b.scheduler);  // never resumed
  fail("a finished CUDA thread was resumed");
}

// Suspends the running fiber in `state` until the scheduler opens its barrier.
void wait(FiberState state, unsigned mask) {
  Block& b = block();
  if (b.current < 0) fail("a barrier or shuffle outside a kernel");
  Fiber& f = b.fibers[b.current];
  f.state = state;
  f.mask = mask;
  switch_context(f.context, b.scheduler);
}

// Lanes of warp w that exist in this block, as a mask.
unsigned existing_lanes(const Block& b, unsigned warp) {
  const unsigned first = warp * kWarpSize;
  const unsigned count = b.threads - first < kWarpSize ? b.threads - first : kWarpSize;
  return count == kWarpSize ? 0xffffffffu : (1u << count) - 1;
}

std::string where(const Block& b, unsigned linear) {
  return std::string("kernel ") + b.kernel + ", block (" + std::to_string(blockIdx.x) + "," +
         std::to_string(blockIdx.y) + "," + std::to_string(blockIdx.z) + "), thread " +
         std::to_string(linear);
}

// Opens the barriers whose threads have all arrived; false when none could open.
bool open_barriers(Block& b) {
  bool opened = false;
  bool all_at_block = true;
  bool any_at_block = false;
  for (const Fiber& f : b.fibers) {
    if (f.state == FiberState::at_block_barrier)
      any_at_block = true;
    else if (f.state != FiberState::done)
      all_at_block = false;
  }
  if (any_at_block && all_at_block) {
    for (Fiber& f : b.fibers)
      if (f.state == FiberState::at_block_barrier) f.state = FiberState::ready;
    return true;
  }
  const unsigned warps = (b.threads + kWarpSize - 1) / kWarpSize;
  for (unsigned w = 0; w < warps; ++w) {
    unsigned waiting = 0;
    unsigned mask = 0;
    for (unsigned lane = 0; lane < kWarpSize && w * kWarpSize + lane < b.threads; ++lane) {
      const Fiber& f = b.fibers[w * kWarpSize + lane];
      if (f.state == FiberState::at_warp_barrier) {
        waiting |= 1u << lane;
        mask = f.mask;
      }
    }
    if (waiting == 0) continue;
    const unsigned named = mask & existing_lanes(b, w);
    for (unsigned lane = 0; lane < kWarpSize; ++lane) {
      if ((named >> lane & 1u) == 0) continue;
      const unsigned linear = w * kWarpSize + lane;
      if (b.fibers[linear].state == FiberState::done)
        fail(where(b, linear) +
             " exited before a warp-synchronous call (shuffle or __syncwarp) "
             "whose mask names it");
    }
    if ((waiting & named) == named) {
      for (unsigned lane = 0; lane < kWarpSize; ++lane)
        if (named >> lane & 1u) b.fibers[w * kWarpSize + lane].state = FiberState::ready;
      opened = true;
    }
  }
  return opened;
}

// How far below the top of its kStackBytes fiber t's stack starts (16 KiB at most). The stacks
// are kStackBytes apart, so unskewed the frames of every fiber at equal depths fall in the same
// cache sets and evict each other at every switch (the replica tests took 13 % longer).
std::size_t stack_skew(unsigned t) {
  return std::size_t{t % 256} * 64;
}

void run_block(Block& b) {
  for (unsigned t = 0; t < b.threads; ++t) {
    Fiber& f = b.fibers[t];
    f.state = FiberState::ready;
    unsigned char* stack = b.stacks + std::size_t{t} * kStackBytes;
    AT_EMU_UNPOISON(stack, kStackBytes);
    start_context(f.context, stack, kStackBytes - stack_skew(t), fiber_main);
  }
  std::memset(b.dynamic_shared.data(), 0xff, b.dynamic_shared.size());
  b.poisoned_static_shared.clear();
  unsigned live = b.threads;
  while (live > 0) {
    bool ran = false;
    for (unsigned i = 0; i < b.threads; ++i) {
      const unsigned t = reverse_order() ? b.threads - 1 - i : i;
      Fiber& f = b.fibers[t];
      if (f.state != FiberState::ready) continue;
      b.current = static_cast<int>(t);
      set_thread_index(t);
      switch_context(b.scheduler, f.context);
      b.current = -1;
      if (f.state == FiberState::done) --live;
      ran = true;
    }
    if (live == 0) break;
    if (!open_barriers(b) && !ran)
      fail(std::string("kernel ") + b.kernel +
           ": threads wait at different barriers and none can proceed (a __syncthreads that "
           "not every thread reaches, or a shuffle inside divergent code)");
  }
}

void run_grid(const char* name, dim3 grid, dim3 block_dim, std::size_t shared_bytes,
              const std::function<void()>& body) {
  Block& b = block();
  if (b.body != nullptr) fail(std::string("kernel ") + name + " launched from inside a kernel");
  b.kernel = name;
  b.threads = block_dim.x * block_dim.y * block_dim.z;
  b.fibers.assign(b.threads, Fiber{});
  b.dynamic_shared.assign(shared_bytes, 0);
  b.body = &body;
  b.stacks = stacks();
  gridDim = grid;
  blockDim = block_dim;
  const unsigned long long blocks = 1ull * grid.x * grid.y * grid.z;
  for (unsigned long long i = 0; i < blocks; ++i) {
    const unsigned long long linear = reverse_order() ? blocks - 1 - i : i;
    blockIdx = uint3{static_cast<unsigned>(linear % grid.x),
                     static_cast<unsigned>(linear / grid.x % grid.y),
                     static_cast<unsigned>(linear / (1ull * grid.x * grid.y))};
    run_block(b);
  }
  b.body = nullptr;
}

}  // namespace

void launch_grid(const char* name, dim3 grid, dim3 block_dim, std::size_t shared_bytes,
                 cudaStream_t stream, std::function<void()> thread_body) {
  std::lock_guard lock(api_lock());
  const unsigned long long threads = 1ull * block_dim.x * block_dim.y * block_dim.z;
  if (threads == 0 || threads > kMaxThreads || block_dim.z > 64 || grid.x == 0 || grid.y == 0 ||
      grid.z == 0 || grid.y > 65535 || grid.z > 65535 || shared_bytes > 227 * 1024) {
    // A GPU refuses the launch and reports it through cudaGetLastError.
    std::fprintf(stderr,
                 "cuda-emu: kernel %s: invalid launch configuration grid (%u,%u,%u) block "
                 "(%u,%u,%u) shared %zu bytes\n",
                 name, grid.x, grid.y, grid.z, block_dim.x, block_dim.y, block_dim.z, shared_bytes);
    fail(std::string("kernel ") + name + ": invalid launch configuration");
  }
  if (shared_bytes > 48 * 1024) {
    // A GPU refuses more than 48 KB of dynamic shared memory unless the kernel's
    // cudaFuncAttributeMaxDynamicSharedMemorySize was raised first, which the emulator does not
    // model: stop rather than accept what a GPU would refuse.
    fail(std::string("kernel ") + name + ": " + std::to_string(shared_bytes) +
         " bytes of dynamic shared memory exceed the 48 KB a launch may use without "
         "cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize)");
  }
  enqueue(
      stream,
      [name, grid, block_dim, shared_bytes, body = std::move(thread_body)] {
        run_grid(name, grid, block_dim, shared_bytes, body);
      },
      name);
}

void check_kernel_pointer(const char* kernel, int index, const void* pointer) {
  if (pointer == nullptr) return;
  if (!is_device(pointer, 0))
    fail(std::string("kernel ") + kernel + ": argument " + std::to_string(index) +
         " is a pointer outside every device allocation (a host pointer or a freed buffer)");
}

void* dynamic_shared_bytes() {
  return block().dynamic_shared.data();
}

// Called by every thread at each static __shared__ declaration it passes (translate.py adds the
// call); the first thread of a block to pass it fills it, later ones find it filled already.
void poison_static_shared(void* address, std::size_t bytes) {
  Block& b = block();
  if (b.current < 0) fail("a static __shared__ declaration outside a kernel");
  auto& done = b.poisoned_static_shared;
  if (std::find(done.begin(), done.end(), address) != done.end()) return;
  std::memset(address, 0xff, bytes);
  done.push_back(address);
}

void sync_block() {
  wait(FiberState::at_block_barrier, 0);
}

void sync_warp(unsigned mask) {
  wait(FiberState::at_warp_barrier, mask);
}

void fail_misaligned(const void* pointer, std::size_t bytes) {
  char text[160];
  std::snprintf(text, sizeof text,
                "a %zu-byte access at %p: misaligned address (a vector access needs a %zu-byte "
                "aligned pointer)",
                bytes, pointer, bytes);
  fail(std::string("kernel ") + block().kernel + ": " + text);
}

int lane_id() {
  return block().current % kWarpSize;
}

void exchange(unsigned mask, const void* value, std::size_t bytes, int source, void* out) {
  Block& b = block();
  if (bytes > sizeof(std::uint64_t)) fail("a shuffle of more than 8 bytes");
  const int me = b.current;
  std::memcpy(&b.fibers[me].exchange, value, bytes);
  wait(FiberState::at_warp_barrier, mask);
  const int warp_base = me - me % kWarpSize;
  const int from = warp_base + source;
  if (static_cast<unsigned>(from) >= b.threads || ((mask >> source) & 1u) == 0)
    std::memcpy(out, value, bytes);  // an inactive source lane: CUDA leaves the result undefined
  else
    std::memcpy(out, &b.fibers[from].exchange, bytes);
  wait(FiberState::at_warp_barrier, mask);  // nobody overwrites a value before all have read it
}

void gather_warp(const void* value, std::size_t bytes, void* all) {
  Block& b = block();
  const int me = b.current;
  const int warp_base = me - me % kWarpSize;
  if (existing_lanes(b, static_cast<unsigned>(me / kWarpSize)) != 0xffffffffu)
    fail(where(b, static_cast<unsigned>(me)) +
         ": a warp-wide matrix operation (mma.sync) in a warp with fewer than 32 threads");
  b.fibers[me].exchange = reinterpret_cast<std::uintptr_t>(value);
  wait(FiberState::at_warp_barrier, 0xffffffffu);
  for (int lane = 0; lane < kWarpSize; ++lane)
    std::memcpy(static_cast<unsigned char*>(all) + lane * bytes,
                reinterpret_cast<const void*>(b.fibers[warp_base + lane].exchange), bytes);
  wait(FiberState::at_warp_barrier, 0xffffffffu);  // every copy is taken before a lane moves on
}

}  // namespace cuda_emu
