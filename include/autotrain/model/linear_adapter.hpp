#pragma once
// A term that a unit's linear layers carry beyond y = x · Wᵀ + b and that no merged weight can
// express: LoRA's adapter dropout in training (model/lora_dropout.hpp), whose mask multiplies the
// input of the adapters only. A UnitAccess offers one per unit (BasicUnitAccess::linear_adapter);
// the models (on the CPU and on a device alike) then call it at every linear of that unit, right
// after the linear's own forward and right after its own backward, so the term's products see
// the linear's input and output gradient while they are at hand. Without one (the common case)
// the models run as before.
//
// A linear is named by its weight's offset in the unit (where the layout puts it). The models
// fuse some weights that follow each other in the layout (Llama's q|k|v and gate|up): then
// `weight` is the first one's offset, `out` the fused output width, and the adapter serves
// every weight that lies inside [weight, weight + in · out).
//
// Shapes: N rows (B·T), IN input and OUT output features; x [N, IN], y and dy [N, OUT],
// dx [N, IN]. Parameter gradients accumulate (+=), as the models' do.
#include <cstddef>

namespace autotrain::model {

template <typename F>
class BasicLinearAdapter {
 public:
  virtual ~BasicLinearAdapter() = default;
  // y += the term of the linear at `weight` of `unit`, given its input x.
  virtual void forward(int unit, std::size_t weight, const F* x, F* y, std::size_t rows,
                       std::size_t in, std::size_t out) = 0;
  // dx += the term's gradient with respect to x, given dy; its own parameters' gradients go
  // where the access keeps them.
  virtual void backward(int unit, std::size_t weight, const F* x, const F* dy, F* dx,
                        std::size_t rows, std::size_t in, std::size_t out) = 0;
};

}  // namespace autotrain::model
