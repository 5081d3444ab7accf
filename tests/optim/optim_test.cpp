#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "autotrain/core/error.hpp"
#include "autotrain/optim/optimizer.hpp"
#include "autotrain/optim/schedule.hpp"

namespace autotrain::optim_test {
namespace {

// torch.optim.AdamW written out in double for one element.
struct ReferenceAdamW {
  double p, m = 0, v = 0;
  int t = 0;
  void step(double g, double lr, double wd) {
    ++t;
    p -= lr * wd * p;
    m = 0.9 * m + 0.1 * g;
    v = 0.999 * v + 0.001 * g * g;
    const double m_hat = m / (1 - std::pow(0.9, t));
    const double v_hat = v / (1 - std::pow(0.999, t));
    p -= lr * m_hat / (std::sqrt(v_hat) + 1e-8);
  }
};

TEST(AdamW, MatchesTorchFormulaOverSeveralStepsWithAndWithoutDecay) {
  OptimizerSettings settings;
  settings.weight_decay = 0.1f;
  // Elements 0..1 decay, 2..3 do not (a bias), element 4 is not owned by this rank.
  Optimizer adamw(settings, {{0, 2, true}, {2, 4, false}});
  std::vector<float> params = {0.5f, -1.0f, 0.25f, 2.0f, 7.0f};
  std::vector<ReferenceAdamW> reference = {{0.5}, {-1.0}, {0.25}, {2.0}};
  for (int step = 0; step < 5; ++step) {
    std::vector<float> grads = {0.1f * step, -0.3f, 0.02f, 1.5f - step, 9.0f};
    adamw.step(params, grads, 0, 1e-2f, 1.0f);
    for (size_t i = 0; i < 4; ++i) reference[i].step(grads[i], 1e-2, i < 2 ? 0.1 : 0.0);
  }
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(params[i], reference[i].p, 1e-6) << i;
  EXPECT_EQ(params[4], 7.0f);
  EXPECT_EQ(adamw.steps_taken(), 5);
  EXPECT_EQ(adamw.state_elements(), 8u);
}

TEST(AdamW, UpdatesAShardBufferOffsetByItsBase) {
  Optimizer adamw(OptimizerSettings{}, {{100, 102, true}});
  std::vector<float> shard = {1.0f, 1.0f};
  std::vector<float> grads = {1.0f, -1.0f};
  adamw.step(shard, grads, 100, 0.1f, 1.0f);
  // The first Adam step moves each weight by lr against the gradient's sign.
  EXPECT_NEAR(shard[0], 0.9f, 1e-6);
  EXPECT_NEAR(shard[1], 1.1f, 1e-6);
}

TEST(AdamW, GradScaleActsLikeScaledGradients) {
  Optimizer a(OptimizerSettings{}, {{0, 1, true}});
  Optimizer b(OptimizerSettings{}, {{0, 1, true}});
  std::vector<float> pa = {1.0f}, pb = {1.0f};
  std::vector<float> ga = {0.5f}, gb = {1.0f};
  for (int i = 0; i < 3; ++i) {
    a.step(pa, ga, 0, 0.01f, 1.0f);
    b.step(pb, gb, 0, 0.01f, 0.5f);
  }
  EXPECT_FLOAT_EQ(pa[0], pb[0]);
}

TEST(Sgd, UsesTorchMomentumAndCoupledDecay) {
  OptimizerSettings settings;
  settings.kind = OptimizerKind::sgd;
  settings.momentum = 0.9f;
  settings.weight_decay = 0.5f;
  Optimizer sgd(settings, {{0, 1, true}});
  std::vector<float> p = {1.0f};
  std::vector<float> g = {0.2f};
  sgd.step(p, g, 0, 0.1f, 1.0f);  // d = 0.2 + 0.5 = 0.7; buf = 0.7; p = 1 - 0.07
  EXPECT_NEAR(p[0], 0.93f, 1e-6);
  sgd.step(p, g, 0, 0.1f, 1.0f);  // d = 0.2 + 0.465 = 0.665; buf = 0.63 + 0.665 = 1.295
  EXPECT_NEAR(p[0], 0.93f - 0.1295f, 1e-6);
}

TEST(Optimizer, AcceptsAutoTrainNamesAndRejectsOthers) {
  EXPECT_EQ(parse_optimizer("adamw_torch", "optimizer"), OptimizerKind::adamw);
  EXPECT_EQ(parse_optimizer("sgd", "optimizer"), OptimizerKind::sgd);
  try {
    parse_optimizer("lion", "--optimizer");
    FAIL();
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("'lion'"), std::string::npos);
    EXPECT_NE(std::string(error.what()).find("adamw_torch"), std::string::npos);
  }
}

TEST(Schedule, LinearWarmsUpThenDecaysToZero) {
  LrSchedule schedule(ScheduleKind::linear, 1.0, 100, 0.1);
  EXPECT_EQ(schedule.warmup_steps(), 10);
  EXPECT_DOUBLE_EQ(schedule.lr(0), 0.1);
  EXPECT_DOUBLE_EQ(schedule.lr(9), 1.0);
  EXPECT_DOUBLE_EQ(schedule.lr(10), 1.0);
  EXPECT_NEAR(schedule.lr(55), 0.5, 1e-12);
  EXPECT_NEAR(schedule.lr(99), 1.0 / 90.0, 1e-12);
}

TEST(Schedule, CosineHalvesAtMidpointAndConstantHasNoWarmup) {
  LrSchedule cosine(ScheduleKind::cosine, 2.0, 20, 0.0);
  EXPECT_DOUBLE_EQ(cosine.lr(0), 2.0);
  EXPECT_NEAR(cosine.lr(10), 1.0, 1e-12);
  // transformers' constant ignores warmup; constant_with_warmup ramps up first.
  LrSchedule constant(ScheduleKind::constant, 3e-4, 50, 0.1);
  EXPECT_EQ(constant.warmup_steps(), 0);
  EXPECT_DOUBLE_EQ(constant.lr(0), 3e-4);
  LrSchedule warm(ScheduleKind::constant_with_warmup, 3e-4, 50, 0.1);
  EXPECT_NEAR(warm.lr(0), 3e-4 / 5, 1e-15);
  EXPECT_DOUBLE_EQ(warm.lr(49), 3e-4);
}

// The values transformers' lambdas give (optimization.py) after a warmup of 10 of 110 steps.
TEST(Schedule, TransformersSchedulesAfterWarmup) {
  const double lr = 1e-3;
  LrSchedule restarts(ScheduleKind::cosine_with_restarts, lr, 110, 10.0 / 110);
  EXPECT_EQ(restarts.warmup_steps(), 10);
  EXPECT_NEAR(restarts.lr(60), lr * 0.5, 1e-15);  // progress 0.5: cos(pi / 2) = 0
  EXPECT_NEAR(restarts.lr(35), lr * 0.5 * (1 + std::cos(std::numbers::pi * 0.25)), 1e-15);
  LrSchedule poly(ScheduleKind::polynomial, lr, 110, 10.0 / 110);
  // (lr - 1e-7) * (1 - 0.25) + 1e-7
  EXPECT_NEAR(poly.lr(35), (lr - 1e-7) * 0.75 + 1e-7, 1e-15);
  EXPECT_NEAR(poly.lr(10), lr, 1e-15);
  LrSchedule isqrt(ScheduleKind::inverse_sqrt, lr, 110, 10.0 / 110);
  EXPECT_NEAR(isqrt.lr(10), lr, 1e-15);      // 1 / sqrt(10 / 10)
  EXPECT_NEAR(isqrt.lr(40), lr / 2, 1e-15);  // 1 / sqrt(40 / 10)
  LrSchedule isqrt_cold(ScheduleKind::inverse_sqrt, lr, 110, 0.0);
  EXPECT_NEAR(isqrt_cold.lr(30000), lr / 2, 1e-15);  // timescale 10,000 without warmup
  LrSchedule floor(ScheduleKind::cosine_with_min_lr, lr, 110, 10.0 / 110, 0.1);
  EXPECT_NEAR(floor.lr(60), lr * (0.1 + 0.9 * 0.5), 1e-15);
  EXPECT_NEAR(floor.lr(109), lr * (0.1 + 0.9 * 0.5 * (1 + std::cos(std::numbers::pi * 0.99))),
              1e-15);
}

// transformers' warmup_steps beats the ratio; DeepSpeed's log ramp, one step ahead as the
// linear one: DeepSpeed's gamma log(s + 1) / log(W) at s = step + 1.
TEST(Schedule, WarmupStepsAndDeepSpeedsLogRamp) {
  const LrSchedule steps(ScheduleKind::linear, 1.0, 100, WarmupShape{0.5, 4, false});
  EXPECT_EQ(steps.warmup_steps(), 4);
  EXPECT_DOUBLE_EQ(steps.lr(1), 0.5);
  const LrSchedule log(ScheduleKind::constant_with_warmup, 2.0, 100, WarmupShape{0.0, 9, true});
  for (long long step = 0; step < 9; ++step) {
    EXPECT_NEAR(log.lr(step), 2.0 * std::min(1.0, std::log(step + 2.0) / std::log(10.0)), 1e-15);
  }
  EXPECT_DOUBLE_EQ(log.lr(8), 2.0);
  EXPECT_DOUBLE_EQ(log.lr(9), 2.0);
  const LrSchedule cold(ScheduleKind::linear, 1.0, 10, WarmupShape{0.5, 0, false});
  EXPECT_DOUBLE_EQ(cold.lr(0), 1.0);  // warmup_steps 0: no warmup
}

// transformers' get_wsd_schedule: warmup (shaped), the peak, the decay to min_lr_ratio, then
// the floor; our warmup one step ahead as the other schedules'.
TEST(Schedule, WarmupStableDecayAsTransformersDefinesIt) {
  const double lr = 2e-3;
  StableDecay wsd = parse_scheduler_kwargs(
      ScheduleKind::warmup_stable_decay,
      R"({"num_decay_steps": 8, "min_lr_ratio": 0.1, "warmup_type": "1-sqrt"})", "kwargs");
  EXPECT_EQ(wsd.decay_type, "cosine");
  EXPECT_EQ(wsd.stable_steps, -1);
  // 40 steps: warmup 4, stable 40 - 4 - 8 = 28, decay 8.
  const LrSchedule schedule(ScheduleKind::warmup_stable_decay, lr, 40, WarmupShape{0.1}, 0.0, wsd);
  EXPECT_NEAR(schedule.lr(0), lr * (0.1 + 0.9 * (1 - std::sqrt(1 - 0.25))), 1e-15);
  EXPECT_DOUBLE_EQ(schedule.lr(3), lr);
  EXPECT_DOUBLE_EQ(schedule.lr(31), lr);
  EXPECT_NEAR(schedule.lr(34), lr * (0.1 + 0.9 * 0.5 * (1 + std::cos(std::numbers::pi * 2.0 / 8))),
              1e-15);
  EXPECT_NEAR(schedule.lr(36), lr * (0.1 + 0.9 * 0.5), 1e-15);
  EXPECT_NEAR(schedule.lr(39), lr * (0.1 + 0.9 * 0.5 * (1 + std::cos(std::numbers::pi * 7.0 / 8))),
              1e-15);
  EXPECT_NEAR(schedule.lr(45), lr * 0.1, 1e-15);  // past the decay: the floor
  wsd.stable_steps = 2;
  wsd.decay_type = "linear";
  const LrSchedule short_stable(ScheduleKind::warmup_stable_decay, lr, 40, WarmupShape{0.1}, 0.0,
                                wsd);
  EXPECT_NEAR(short_stable.lr(8), lr * (0.1 + 0.9 * (1 - 2.0 / 8)), 1e-15);
  EXPECT_NEAR(short_stable.lr(20), lr * 0.1, 1e-15);
}

TEST(Schedule, SchedulerKwargsNameTheBadKey) {
  const auto message = [](ScheduleKind kind, const char* text) {
    try {
      parse_scheduler_kwargs(kind, text, "lr_scheduler_kwargs");
    } catch (const Error& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  const auto wsd = ScheduleKind::warmup_stable_decay;
  EXPECT_NE(message(wsd, "{}").find("needs num_decay_steps"), std::string::npos);
  EXPECT_NE(message(wsd, R"({"num_decay_steps": -3})").find("num_decay_steps: expected a count"),
            std::string::npos);
  EXPECT_NE(message(wsd, R"({"num_decay_steps": 3, "decay_type": "exp"})")
                .find("decay_type: expected linear, cosine or 1-sqrt"),
            std::string::npos);
  EXPECT_NE(
      message(wsd, R"({"num_decay_steps": 3, "lr_end": 0})").find("'lr_end' is not a keyword"),
      std::string::npos);
  EXPECT_NE(message(wsd, "[1]").find("expected a JSON object"), std::string::npos);
  EXPECT_NE(message(ScheduleKind::cosine, R"({"num_cycles": 2})").find("only scheduler"),
            std::string::npos);
  EXPECT_EQ(message(ScheduleKind::cosine, ""), "no error");
}

TEST(Schedule, NamesTransformersSchedulersAndRefusesOthers) {
  EXPECT_EQ(parse_schedule("inverse_sqrt", "scheduler"), ScheduleKind::inverse_sqrt);
  try {
    parse_schedule("onecycle", "--scheduler");
    FAIL();
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("'onecycle'"), std::string::npos);
    EXPECT_NE(std::string(error.what()).find("cosine_with_min_lr"), std::string::npos);
  }
}

TEST(Clip, ScalesOnlyNormsAboveTheLimit) {
  EXPECT_EQ(clip_factor(0.5, 1.0), 1.0f);
  EXPECT_NEAR(clip_factor(4.0, 1.0), 0.25f, 1e-6);
  EXPECT_EQ(clip_factor(100.0, 0.0), 1.0f);  // max_grad_norm 0 disables clipping
}

}  // namespace
}  // namespace autotrain::optim_test
