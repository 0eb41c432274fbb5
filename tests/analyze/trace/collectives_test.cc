// Collectives matched across ranks (analyze/trace/collectives.h) and the
// communication kernels a rank's trace holds (analyze/trace/comm_kernels.h),
// on breakdowns made by hand: the matching by process group and by stream,
// a missing collective and a disagreeing kind reported and not matched
// past, clock offsets found from the ends, waits and transfers, the cause
// of a late arrival, the bandwidth factors of nccl-tests; and the kernel
// families on names as their own sources define them (the demangled form a
// trace shows), with the kernels of the same namespaces that move nothing.
#include "analyze/trace/collectives.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analyze/trace/comm_kernels.h"

namespace stallscope {
namespace {

// A rank with `steps` steps of 2000 µs from 0, each with `per_step` (up to
// 3) all-reduces; collective k of a step starts at 100 + 600k (+ `late` for
// the ones listed) and every rank's ends at 550 + 600k; `offset` added to
// every time.
struct Late {
  int64_t step;
  size_t seq;
  double us;
};
TraceRankBreakdown Rank(int rank, int steps, int per_step, double offset = 0,
                        std::vector<Late> late = {}, std::string group = "0") {
  TraceRankBreakdown r;
  r.rank = rank;
  r.rank_known = true;
  for (int s = 0; s < steps; ++s) {
    r.steps.push_back(s);
    TraceStepFigures f;
    f.step = s;
    f.start_us = 2000.0 * s + offset;
    f.dur_us = 2000;
    r.step_figures.push_back(f);
    for (int k = 0; k < per_step; ++k) {
      CommKernelUse u;
      u.step = s;
      u.stream = 13;
      u.name = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)";
      u.collective = "allreduce";
      u.group = group;
      u.group_ranks = group.empty() ? "" : "[0, 1, 2]";
      u.bytes = 1 << 20;
      double start = 2000.0 * s + 100 + 600 * k;
      for (const Late& l : late) {
        if (l.step == s && l.seq == static_cast<size_t>(k)) {
          start += l.us;
          u.lead_in.compute_us = l.us;
          u.lead_in.longest_kernel = "the long kernel";
        }
      }
      u.start = start + offset;
      u.end = 2000.0 * s + 550 + 600 * k + offset;
      u.lead_in.from_us = 2000.0 * s + offset;
      r.comm_kernels.push_back(u);
    }
  }
  r.wall_us = 2000.0 * steps;
  return r;
}

TEST(TraceCollectives, WaitsAndTransfersSplitAtTheLastArrival) {
  std::vector<TraceRankBreakdown> ranks = {Rank(0, 2, 2), Rank(1, 2, 2, 0, {{1, 0, 100}}),
                                           Rank(2, 2, 2)};
  CollectiveSplit s = SplitCollectives(ranks, {});
  ASSERT_EQ(s.collectives.size(), 4u);
  const CollectiveInstance* late = nullptr;
  for (const CollectiveInstance& c : s.collectives) {
    if (c.step == 1 && c.seq == 0) late = &c;
  }
  ASSERT_NE(late, nullptr);
  EXPECT_EQ(late->last_rank, 1);
  EXPECT_DOUBLE_EQ(late->lateness_us, 100);
  EXPECT_EQ(late->communicator, "process group 0 [0-2]");
  EXPECT_DOUBLE_EQ(late->transfer_us, 350);
  for (const CollectiveRankTimes& t : late->ranks) {
    EXPECT_DOUBLE_EQ(t.wait_us, t.rank == 1 ? 0 : 100) << t.rank;
    EXPECT_DOUBLE_EQ(t.transfer_us, 350) << t.rank;
  }
  // 1 MiB over 350 µs; an all-reduce of 3 ranks moves 2(n-1)/n of it
  ASSERT_TRUE(late->algbw_gbps.has_value());
  EXPECT_NEAR(*late->algbw_gbps, (1 << 20) / 350e3, 1e-9);
  EXPECT_NEAR(*late->busbw_gbps, *late->algbw_gbps * 4.0 / 3.0, 1e-9);
  const RankSplit* r0 = s.Of(0);
  ASSERT_NE(r0, nullptr);
  EXPECT_DOUBLE_EQ(r0->wait_us, 100);
  EXPECT_DOUBLE_EQ(r0->transfer_us, 3 * 450 + 350);
  EXPECT_EQ(s.Of(1)->last_in, 1u);
  EXPECT_DOUBLE_EQ(s.Of(1)->caused_wait_us, 100);
  // 100 µs of 4000 µs of steps: under the straggler threshold
  EXPECT_TRUE(s.stragglers.empty());
}

TEST(TraceCollectives, ClockOffsetsAreFoundFromTheEnds) {
  std::vector<TraceRankBreakdown> ranks = {Rank(0, 3, 2), Rank(1, 3, 2, 12345.0),
                                           Rank(2, 3, 2, -777.0, {{2, 1, 60}})};
  CollectiveSplit aligned = SplitCollectives(ranks, {});
  EXPECT_NEAR(aligned.Of(1)->clock_offset_us, 12345, 1e-6);
  EXPECT_NEAR(aligned.Of(2)->clock_offset_us, -777, 1e-6);
  EXPECT_NEAR(aligned.spread_max_us, 0, 1e-6);
  for (const CollectiveInstance& c : aligned.collectives) {
    EXPECT_NEAR(c.lateness_us, c.step == 2 && c.seq == 1 ? 60 : 0, 1e-6);
  }
  // taken as written, rank 1 looks 12 ms late everywhere and the ends spread as far
  CollectiveSplit same = SplitCollectives(ranks, {/*same_clock=*/true});
  EXPECT_TRUE(same.same_clock);
  EXPECT_NEAR(same.spread_max_us, 12345 + 777, 1e-6);
  EXPECT_NE(same.clock, aligned.clock);
}

TEST(TraceCollectives, AMissingCollectiveStopsThatStepAndSaysWhichRank) {
  std::vector<TraceRankBreakdown> ranks = {Rank(0, 3, 3), Rank(1, 3, 3), Rank(2, 3, 3)};
  ranks[2].comm_kernels.erase(ranks[2].comm_kernels.begin() + 4);  // step 1's second
  CollectiveSplit s = SplitCollectives(ranks, {});
  EXPECT_EQ(s.collectives.size(), 6u);
  for (const CollectiveInstance& c : s.collectives) EXPECT_NE(c.step, 1);
  ASSERT_EQ(s.notes.size(), 1u);
  EXPECT_NE(s.notes[0].find("step 1: rank 2 ran 2 where the other ranks ran 3"), std::string::npos)
      << s.notes[0];
  EXPECT_EQ(s.Of(2)->unmatched, 2u);
}

TEST(TraceCollectives, KindsThatDisagreeAreNotMatchedFromThere) {
  std::vector<TraceRankBreakdown> ranks = {Rank(0, 1, 3), Rank(1, 1, 3)};
  ranks[1].comm_kernels[1].collective = "allgather";
  CollectiveSplit s = SplitCollectives(ranks, {});
  ASSERT_EQ(s.collectives.size(), 1u);
  EXPECT_EQ(s.collectives[0].seq, 0u);
  ASSERT_EQ(s.notes.size(), 2u);  // and rank 2 of the group given no trace
  EXPECT_NE(s.notes[0].find("#1 is not one kind on every rank (allgather, allreduce)"),
            std::string::npos)
      << s.notes[0];
}

TEST(TraceCollectives, ByStreamWithoutArgsAndAGroupWithRanksNotGiven) {
  std::vector<TraceRankBreakdown> plain = {Rank(0, 1, 2, 0, {}, ""), Rank(1, 1, 2, 0, {}, "")};
  plain[1].comm_kernels[0].stream = plain[1].comm_kernels[1].stream = 7;  // other ids
  CollectiveSplit s = SplitCollectives(plain, {});
  ASSERT_EQ(s.collectives.size(), 2u);
  EXPECT_EQ(s.collectives[0].communicator, "communication stream #1");
  std::vector<TraceRankBreakdown> two = {Rank(0, 1, 1), Rank(1, 1, 1)};  // of [0, 1, 2]
  CollectiveSplit partial = SplitCollectives(two, {});
  ASSERT_EQ(partial.notes.size(), 1u);
  EXPECT_NE(partial.notes[0].find("no trace of rank 2"), std::string::npos) << partial.notes[0];
  EXPECT_TRUE(SplitCollectives({Rank(0, 1, 1)}, {}).collectives.empty());
}

TEST(TraceCollectives, PointToPointAndAStepARankLacksAreNotMatched) {
  std::vector<TraceRankBreakdown> ranks = {Rank(0, 3, 2), Rank(1, 3, 2), Rank(2, 3, 2)};
  for (TraceRankBreakdown& r : ranks) r.comm_kernels[0].collective = "p2p";  // step 0's first
  ranks[1].steps.erase(ranks[1].steps.begin() + 2);  // rank 1 kept no step 2
  CollectiveSplit s = SplitCollectives(ranks, {});
  // step 0's second and step 1's two: not the send/recv, not step 2
  ASSERT_EQ(s.collectives.size(), 3u);
  for (const CollectiveInstance& c : s.collectives) EXPECT_NE(c.step, 2);
  std::string notes;
  for (const std::string& n : s.notes) notes += n + "\n";
  EXPECT_NE(notes.find("3 point-to-point send or receive kernels"), std::string::npos) << notes;
  EXPECT_NE(notes.find("step 2: rank 1 kept no such step"), std::string::npos) << notes;
}

TEST(TraceCollectives, OverlappingCollectivesAreExposedOnce) {
  // Two groups' all-reduces at the same time on two streams, each 450 µs of
  // transfer: exposed once, 450 µs a step, not 900.
  std::vector<TraceRankBreakdown> ranks = {Rank(0, 2, 1), Rank(1, 2, 1)};
  for (TraceRankBreakdown& r : ranks) {
    std::vector<CommKernelUse> twins = r.comm_kernels;
    for (CommKernelUse& k : twins) {
      k.group = "1";
      k.stream = 14;
    }
    r.comm_kernels.insert(r.comm_kernels.end(), twins.begin(), twins.end());
    std::stable_sort(
        r.comm_kernels.begin(), r.comm_kernels.end(),
        [](const CommKernelUse& a, const CommKernelUse& b) { return a.start < b.start; });
  }
  CollectiveSplit s = SplitCollectives(ranks, {});
  ASSERT_EQ(s.collectives.size(), 4u);
  const RankSplit* r0 = s.Of(0);
  ASSERT_NE(r0, nullptr);
  EXPECT_DOUBLE_EQ(r0->transfer_us, 4 * 450);
  EXPECT_DOUBLE_EQ(r0->exposed_us, 2 * 450);
  // compute over half of each: the rest is exposed
  for (TraceRankBreakdown& r : ranks) {
    for (CommKernelUse& k : r.comm_kernels) k.compute_within = {{k.start, k.start + 225}};
  }
  s = SplitCollectives(ranks, {});
  EXPECT_DOUBLE_EQ(s.Of(0)->exposed_us, 2 * 225);
}

TEST(TraceCollectives, AStragglerIsNamedWithTheCauseItsLeadInShows) {
  std::vector<Late> late = {{0, 0, 400}, {1, 0, 400}, {2, 1, 300}};
  std::vector<TraceRankBreakdown> ranks = {Rank(0, 3, 2), Rank(1, 3, 2), Rank(2, 3, 2, 0, late)};
  CollectiveSplit s = SplitCollectives(ranks, {});
  ASSERT_EQ(s.stragglers.size(), 1u);
  const TraceStraggler& t = s.stragglers[0];
  EXPECT_EQ(t.rank, 2);
  EXPECT_EQ(t.last_in, 3u);
  EXPECT_DOUBLE_EQ(t.lateness_max_us, 400);
  EXPECT_DOUBLE_EQ(t.caused_wait_us, 1100);
  EXPECT_EQ(t.cause, "compute");
  EXPECT_EQ(t.cause_detail, "the long kernel");
  EXPECT_DOUBLE_EQ(t.cause_excess_us, 1100);
  EXPECT_EQ(t.late_ranks, std::vector<int>{2});
}

TEST(TraceCommKernels, FamiliesByTheNamesTheirSourcesDefine) {
  struct Case {
    const char* name;
    std::optional<CommFamily> family;
  };
  const Case cases[] = {
      {"ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", CommFamily::kNccl},
      {"ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", CommFamily::kNccl},
      {"mscclKernel_Sum_half_LL_false(ncclDevComm*, mscclAlgo*, mscclWork*)", CommFamily::kNccl},
      {"void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(c10::BFloat16*, "
       "unsigned long, unsigned int**, unsigned long, unsigned long)",
       CommFamily::kSymmetricMemory},
      {"void (anonymous namespace)::two_shot_all_reduce_kernel<c10::BFloat16, 16, 8, false, "
       "false>(c10::BFloat16**, c10::BFloat16*, unsigned long, unsigned long, unsigned int**, "
       "unsigned long, unsigned long, unsigned long)",
       CommFamily::kSymmetricMemory},
      {"c10d::symmetric_memory::barrier_kernel(unsigned int**, int, int, int, unsigned long)",
       CommFamily::kSymmetricMemory},
      {"void alltoall_on_stream_kernel<char>(int, char*, char const*, unsigned long, int)",
       CommFamily::kNvshmem},
      {"void deep_ep::intranode::dispatch<8, 768, 8192>(int4*, float*)", CommFamily::kDeepEp},
      {"void deep_ep::layout::get_dispatch_layout(long const*, int*)", std::nullopt},
      {"void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, "
       "vllm::RankSignals, vllm::Signal volatile*, __nv_bfloat16*, int, int)",
       CommFamily::kVllm},
      {"void vllm::rms_norm_kernel<c10::BFloat16>(c10::BFloat16*)", std::nullopt},
      {"void tensorrt_llm::kernels::oneShotAllReduceKernel<__nv_bfloat16, 8, false>("
       "tensorrt_llm::kernels::AllReduceParams)",
       CommFamily::kTensorRtLlm},
      {"void tensorrt_llm::kernels::reduce_fusion::rms_norm_kernel<__nv_bfloat16>(float*)",
       std::nullopt},
      {"void mscclpp::collective::allreducePacket<(mscclpp::ReduceOp)0, __nv_bfloat16, "
       "__nv_bfloat16>(__nv_bfloat16*)",
       CommFamily::kMscclpp},
      {"sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64", std::nullopt},
      {"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>", std::nullopt},
  };
  for (const Case& c : cases) EXPECT_EQ(CommFamilyOf(c.name), c.family) << c.name;
}

TEST(TraceCommKernels, CollectiveDtypeAndBusFactor) {
  EXPECT_EQ(CollectiveOf("", "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"), "allreduce");
  EXPECT_EQ(CollectiveOf("", "ncclDevKernel_SendRecv(ncclDevComm*)"), "sendrecv");
  EXPECT_EQ(CollectiveOf("", "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)"), "");
  EXPECT_EQ(CollectiveOf("_allgather_base", "ncclDevKernel_Generic()"), "allgather");
  EXPECT_EQ(CollectiveOf("reduce_scatter_tensor_coalesced", ""), "reducescatter");
  EXPECT_EQ(CollectiveOf("all_to_all", ""), "alltoall");
  EXPECT_EQ(CollectiveOf("send", "ncclDevKernel_SendRecv(ncclDevComm*)"), "p2p");
  EXPECT_EQ(CollectiveOf("recv", ""), "p2p");
  EXPECT_EQ(DtypeBytes("BFloat16", ""), 2);
  EXPECT_EQ(DtypeBytes("Float", ""), 4);
  EXPECT_EQ(DtypeBytes("", "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"), 4);
  EXPECT_EQ(DtypeBytes("", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*)"), 2);
  EXPECT_EQ(DtypeBytes("", "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*)"), 1);
  EXPECT_EQ(DtypeBytes("", "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)"), 0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("allreduce", 8), 1.75);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("allgather", 8), 0.875);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("alltoall", 4), 0.75);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("broadcast", 8), 1);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("allreduce", 1), 1);
}

}  // namespace
}  // namespace stallscope
