// plan memory: the model-state bytes against the ZeRO paper's figures, the
// activation formula against the Megatron activation paper's, and the
// layout search.
#include "plan/memory_plan.h"

#include <gtest/gtest.h>

#include <tuple>

namespace stallscope {
namespace {

constexpr double kGB = 1e9;  // the papers' GB

TEST(MemoryPlan, MixedPrecisionAdamIs16BytesPerParameter) {
  StateBytes b = BytesPerParameter(TrainDtype::kBf16, Optimizer::kAdam);
  EXPECT_EQ(b.weights, 2);
  EXPECT_EQ(b.gradients, 2);
  EXPECT_EQ(b.optimizer, 12);
  StateBytes fp32 = BytesPerParameter(TrainDtype::kFp32, Optimizer::kAdam);
  EXPECT_EQ(fp32.weights + fp32.gradients + fp32.optimizer, 16);
  StateBytes sgd = BytesPerParameter(TrainDtype::kFp16, Optimizer::kSgd);
  EXPECT_EQ(sgd.optimizer, 8);
}

// ZeRO paper (Rajbhandari et al. 2020), figure 1: a 7.5B model on 64 GPUs.
TEST(MemoryPlan, ZeroPaperFigureOne) {
  StateBytes b = BytesPerParameter(TrainDtype::kFp16, Optimizer::kAdam);
  auto total = [&](int zero) {
    GpuMemory m = ModelStates(7.5e9, b, 1, 1, 64, zero);
    return (m.weights + m.gradients + m.optimizer) / kGB;
  };
  EXPECT_NEAR(total(0), 120.0, 0.05);
  EXPECT_NEAR(total(1), 31.4, 0.05);
  EXPECT_NEAR(total(2), 16.6, 0.05);
  EXPECT_NEAR(total(3), 1.9, 0.05);
  // Stage 1 shards only the optimizer state.
  GpuMemory one = ModelStates(7.5e9, b, 1, 1, 64, 1);
  EXPECT_NEAR(one.weights / kGB, 15.0, 1e-9);
  EXPECT_NEAR(one.gradients / kGB, 15.0, 1e-9);
  EXPECT_NEAR(one.optimizer / kGB, 1.40625, 1e-9);
}

// ZeRO paper, table 1: 1 trillion parameters on 1024 GPUs with stage 3.
TEST(MemoryPlan, ZeroPaperTrillionOn1024Gpus) {
  GpuMemory m =
      ModelStates(1e12, BytesPerParameter(TrainDtype::kFp16, Optimizer::kAdam), 1, 1, 1024, 3);
  EXPECT_NEAR((m.weights + m.gradients + m.optimizer) / kGB, 15.6, 0.05);
}

TEST(MemoryPlan, TensorAndPipelineShardTheModelStates) {
  StateBytes b = BytesPerParameter(TrainDtype::kBf16, Optimizer::kAdam);
  GpuMemory m = ModelStates(70e9, b, 8, 2, 4, 0);
  EXPECT_NEAR(m.weights, 70e9 / 16 * 2, 1);
  EXPECT_NEAR(m.optimizer, 70e9 / 16 * 12, 1);
}

// Korthikanti et al. 2022: selective recompute saves 70% of the activation
// memory of GPT-3 175B (a=96, h=12288) and 65% of MT-NLG 530B (a=128,
// h=20480) at s=2048: the 5as/h term against 34.
TEST(MemoryPlan, MegatronSelectiveRecomputeSavings) {
  ModelShape gpt3{175e9, 96, 12288, 96, 2048, 1, false};
  double none = LayerActivationBytes(gpt3, 1, Recompute::kNone);
  double selective = LayerActivationBytes(gpt3, 1, Recompute::kSelective);
  EXPECT_NEAR(1 - selective / none, 0.70, 0.005);
  ModelShape mtnlg{530e9, 105, 20480, 128, 2048, 1, false};
  EXPECT_NEAR(1 - LayerActivationBytes(mtnlg, 1, Recompute::kSelective) /
                      LayerActivationBytes(mtnlg, 1, Recompute::kNone),
              0.65, 0.005);
  // Equation 1 itself: s*b*h*(34 + 5as/h) = 2048*12288*114 bytes per layer.
  EXPECT_DOUBLE_EQ(none, 2048.0 * 12288 * 114);
  // Sequence + tensor parallelism divides it by t; full recompute keeps 2sbh.
  EXPECT_DOUBLE_EQ(LayerActivationBytes(gpt3, 8, Recompute::kNone), none / 8);
  EXPECT_DOUBLE_EQ(LayerActivationBytes(gpt3, 1, Recompute::kFull), 2.0 * 2048 * 12288);
  // 1F1B: all layers' worth on the first stage, micro-batch scales it.
  gpt3.micro_batch = 2;
  EXPECT_DOUBLE_EQ(ActivationBytesPerGpu(gpt3, 1, Recompute::kNone), none * 2 * 96);
}

TEST(MemoryPlan, ShapeFromParamsFollowsGpt3) {
  ModelShape s = CompleteShape(ModelShape{175e9, 0, 0, 0, 2048, 1, false});
  EXPECT_TRUE(s.shape_assumed);
  EXPECT_EQ(s.hidden, 12288);  // GPT-3 175B's hidden size
  EXPECT_GE(s.layers, 95);
  EXPECT_LE(s.layers, 98);
  EXPECT_EQ(s.heads, 96);
  ModelShape given = CompleteShape(ModelShape{70e9, 80, 8192, 64, 4096, 1, false});
  EXPECT_FALSE(given.shape_assumed);
  EXPECT_EQ(given.layers, 80);
}

MemoryPlanInput Llama70b(int gpus, uint64_t gpu_mem) {
  MemoryPlanInput in;
  in.model = ModelShape{70e9, 80, 8192, 64, 4096, 1, false};
  in.gpus = gpus;
  in.gpu_memory_bytes = gpu_mem;
  return in;
}

TEST(MemoryPlan, SeventyBillionOn64GpusFindsFittingLayoutsBestFirst) {
  Result<MemoryPlan> plan = PlanMemory(Llama70b(64, 80ull << 30));
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ASSERT_FALSE(plan->layouts.empty());
  const GpuMemory& best = plan->layouts.front();
  EXPECT_TRUE(best.fits);
  EXPECT_LE(best.Total(), plan->usable_bytes);
  EXPECT_EQ(best.tp * best.pp * best.dp, 64);
  // Pure data parallelism cannot hold 70B with its activations in 80 GiB.
  for (const GpuMemory& m : plan->layouts) {
    if (m.tp == 1 && m.pp == 1) {
      EXPECT_FALSE(m.fits);
    }
    if (m.pp > 1) {
      EXPECT_LE(m.zero, 1) << "ZeRO 2/3 do not combine with pipelining";
    }
    EXPECT_LE(m.tp, 8);
  }
  // Fitting layouts first, ordered by the GPUs per replica.
  bool seen_miss = false;
  int last_replica = 0;
  for (const GpuMemory& m : plan->layouts) {
    if (!m.fits) {
      seen_miss = true;
      continue;
    }
    EXPECT_FALSE(seen_miss);
    EXPECT_GE(m.tp * m.pp, last_replica);
    last_replica = m.tp * m.pp;
  }
  // tp=8, ZeRO-1: 70e9/8 params -> 35 GB of weights+grads, 13.1 GB optimizer,
  // 4096*8192*34*80/8 activations.
  for (const GpuMemory& m : plan->layouts) {
    if (m.tp == 8 && m.pp == 1) {
      EXPECT_EQ(m.zero, 1);  // ZeRO-0 would need 140 GB; ZeRO-1 is the lowest that fits
      EXPECT_NEAR(m.weights + m.gradients, 35e9, 1e3);
      EXPECT_NEAR(m.optimizer, 70e9 / 8 * 12 / 8, 1e3);
      EXPECT_NEAR(m.activations, 4096.0 * 8192 * 34 * 80 / 8, 1);
    }
  }
  EXPECT_FALSE(plan->assumptions.empty());
}

// A 70B model does not fit with plain data parallelism: the plan shows
// it anyway, with why, and the model states' total; the 7.5B model of the
// ZeRO paper's figure 1 gives its 120 GB per GPU there.
TEST(MemoryPlan, PlainDataParallelIsAlwaysShownWithWhyItDoesNotFit) {
  Result<MemoryPlan> plan = PlanMemory(Llama70b(64, 80ull << 30));
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  const GpuMemory& dp = plan->data_parallel;
  EXPECT_EQ(std::make_tuple(dp.tp, dp.pp, dp.dp, dp.zero), std::make_tuple(1, 1, 64, 0));
  EXPECT_FALSE(dp.fits);
  EXPECT_EQ(dp.over_budget, "weights");  // 140 GB of bf16 weights alone pass 72 GiB
  EXPECT_NEAR(dp.weights / kGB, 140.0, 1e-6);
  EXPECT_NEAR(plan->model_states_bytes / kGB, 70.0 * 16, 1e-6);
  for (const GpuMemory& m : plan->layouts) {
    EXPECT_EQ(m.fits, m.over_budget.empty()) << m.tp << "/" << m.pp << "/" << m.zero;
  }

  MemoryPlanInput zero_paper;
  zero_paper.model.params = 7.5e9;
  zero_paper.model.layers = 32;
  zero_paper.model.hidden = 4096;
  zero_paper.gpus = 64;
  zero_paper.gpu_memory_bytes = 80ull << 30;
  zero_paper.dtype = TrainDtype::kFp16;
  Result<MemoryPlan> small = PlanMemory(zero_paper);
  ASSERT_TRUE(small.ok()) << small.status().message();
  const GpuMemory& base = small->data_parallel;
  EXPECT_NEAR((base.weights + base.gradients + base.optimizer) / kGB, 120.0, 0.05);
  EXPECT_NEAR(small->model_states_bytes / kGB, 120.0, 0.05);  // one replica holds it all
  EXPECT_FALSE(base.fits);
  EXPECT_EQ(base.over_budget, "optimizer");  // 30 GB of weights and gradients fit; +90 do not
  // Given room, it fits and says nothing is over.
  zero_paper.gpu_memory_bytes = 400ull << 30;
  Result<MemoryPlan> roomy = PlanMemory(zero_paper);
  ASSERT_TRUE(roomy.ok());
  EXPECT_TRUE(roomy->data_parallel.fits);
  EXPECT_EQ(roomy->data_parallel.over_budget, "");
}

TEST(MemoryPlan, NothingFitsListsNearestMissFirst) {
  Result<MemoryPlan> plan = PlanMemory(Llama70b(8, 24ull << 30));
  ASSERT_TRUE(plan.ok());
  ASSERT_FALSE(plan->layouts.empty());
  for (size_t i = 0; i < plan->layouts.size(); ++i) {
    EXPECT_FALSE(plan->layouts[i].fits);
    if (i > 0) {
      EXPECT_LE(plan->layouts[i - 1].Total(), plan->layouts[i].Total());
    }
  }
}

TEST(MemoryPlan, FixedLayoutIsHonoured) {
  MemoryPlanInput in = Llama70b(64, 80ull << 30);
  in.tp = 8;
  in.pp = 2;
  in.zero = 1;
  Result<MemoryPlan> plan = PlanMemory(in);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->layouts.size(), 1u);
  EXPECT_EQ(plan->layouts[0].dp, 4);
  EXPECT_EQ(plan->layouts[0].zero, 1);
}

TEST(MemoryPlan, BadInputNamesTheFlag) {
  MemoryPlanInput in = Llama70b(64, 80ull << 30);
  in.tp = 3;
  Result<MemoryPlan> plan = PlanMemory(in);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("--tp 3"), std::string::npos);
  in = Llama70b(0, 80ull << 30);
  EXPECT_NE(PlanMemory(in).status().message().find("--gpus"), std::string::npos);
  in = Llama70b(64, 80ull << 30);
  in.zero = 4;
  EXPECT_NE(PlanMemory(in).status().message().find("--zero"), std::string::npos);
  in = Llama70b(64, 80ull << 30);
  in.tp = 16;  // divides the 64 GPUs, not 6 heads
  in.model.heads = 6;
  EXPECT_NE(PlanMemory(in).status().message().find("heads"), std::string::npos);
}

TEST(MemoryPlan, ParsesParameterCounts) {
  EXPECT_EQ(ParseParamCount("70B"), 70e9);
  EXPECT_EQ(ParseParamCount("7.5b"), 7.5e9);
  EXPECT_EQ(ParseParamCount("350M"), 350e6);
  EXPECT_EQ(ParseParamCount("1T"), 1e12);
  EXPECT_EQ(ParseParamCount("1.3e9"), 1.3e9);
  EXPECT_EQ(ParseParamCount("175000000000"), 175e9);
  for (const char* bad : {"", "B", "-5B", "abc", "70X", "0", "inf", "nan", "1e30", "B70"})
    EXPECT_FALSE(ParseParamCount(bad).has_value()) << bad;
  EXPECT_EQ(ParseDtype("BF16"), TrainDtype::kBf16);
  EXPECT_FALSE(ParseDtype("int8").has_value());
  EXPECT_EQ(ParseOptimizer("adamw"), Optimizer::kAdam);
  EXPECT_EQ(ParseRecompute("full"), Recompute::kFull);
}

}  // namespace
}  // namespace stallscope
