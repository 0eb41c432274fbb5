#include "analyze/robust_slope.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace stallscope {
namespace {

TEST(TheilSen, ExactLine) {
  std::vector<double> x, y;
  for (int i = 0; i < 50; ++i) {
    x.push_back(i * 2.0);
    y.push_back(3.5 * i * 2.0 - 7);
  }
  std::optional<SlopeFit> fit = TheilSen(x, y);
  ASSERT_TRUE(fit.has_value());
  EXPECT_DOUBLE_EQ(fit->slope, 3.5);
  EXPECT_DOUBLE_EQ(fit->intercept, -7);
  EXPECT_EQ(fit->pairs, 50u * 49 / 2);
  EXPECT_DOUBLE_EQ(RobustResidualSigma(x, y, *fit), 0);
}

TEST(TheilSen, ThirtyPercentWildOutliersDoNotMoveTheSlope) {
  // Every tenth point of three (30%) is thrown far above or below the line,
  // as a bad sample would be; least squares would follow them.
  std::mt19937 random(7);
  std::vector<double> x, y;
  for (int i = 0; i < 400; ++i) {
    double yi = 1000 + 2.0 * i + static_cast<double>(random() % 100) / 100.0;  // noise < 1
    if (i % 10 < 3) yi += (random() % 2 ? 1 : -1) * (1e6 + static_cast<double>(random() % 1000000));
    x.push_back(i);
    y.push_back(yi);
  }
  std::optional<SlopeFit> fit = TheilSen(x, y);
  ASSERT_TRUE(fit.has_value());
  EXPECT_NEAR(fit->slope, 2.0, 0.02);
  EXPECT_NEAR(fit->intercept, 1000.5, 2.0);
}

TEST(TheilSen, OutliersAllOnOneSideStillGiveTheSlope) {
  // A sampler that reads 0 for an exiting process: a one-sided, constant error.
  std::vector<double> x, y;
  for (int i = 0; i < 300; ++i) {
    x.push_back(i);
    y.push_back(i % 5 == 0 ? 0.0 : 5e9 + 1e6 * i);  // 20% zeros
  }
  std::optional<SlopeFit> fit = TheilSen(x, y);
  ASSERT_TRUE(fit.has_value());
  EXPECT_NEAR(fit->slope, 1e6, 1e4);
}

TEST(TheilSen, TooFewPointsOrNoSpreadInXGiveNothing) {
  std::vector<double> none;
  EXPECT_FALSE(TheilSen(none, none).has_value());
  std::vector<double> one_x{1}, one_y{2};
  EXPECT_FALSE(TheilSen(one_x, one_y).has_value());
  std::vector<double> same_x{3, 3, 3}, ys{1, 2, 3};
  EXPECT_FALSE(TheilSen(same_x, ys).has_value());
  std::vector<double> two_y{1, 2};
  EXPECT_FALSE(TheilSen(ys, two_y).has_value());  // lengths differ
}

TEST(TheilSen, TwoPoints) {
  std::vector<double> x{0, 4}, y{1, 9};
  std::optional<SlopeFit> fit = TheilSen(x, y);
  ASSERT_TRUE(fit.has_value());
  EXPECT_DOUBLE_EQ(fit->slope, 2);
  EXPECT_EQ(fit->pairs, 1u);
}

TEST(TheilSen, RepeatedXIsSkippedNotDividedByZero) {
  std::vector<double> x{0, 0, 1, 1, 2, 2}, y{0, 0, 3, 3, 6, 6};
  std::optional<SlopeFit> fit = TheilSen(x, y);
  ASSERT_TRUE(fit.has_value());
  EXPECT_DOUBLE_EQ(fit->slope, 3);
  EXPECT_EQ(fit->pairs, 15u - 3);  // the three pairs with equal x carry no slope
}

TEST(TheilSen, TwentyThousandPointsAreSubsampledAndDeterministic) {
  std::mt19937 random(11);
  std::vector<double> x, y;
  for (int i = 0; i < 20000; ++i) {
    x.push_back(i * 0.5);
    y.push_back(-4.0 * i * 0.5 + static_cast<double>(random() % 1000));
  }
  std::optional<SlopeFit> fit = TheilSen(x, y);
  ASSERT_TRUE(fit.has_value());
  // All pairs would be ~200 million; the sample is bounded.
  EXPECT_LE(fit->pairs, kTheilSenMaxPairs);
  EXPECT_GT(fit->pairs, kTheilSenMaxPairs * 9 / 10);
  EXPECT_NEAR(fit->slope, -4.0, 0.05);
  std::optional<SlopeFit> again = TheilSen(x, y);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->slope, fit->slope);
  EXPECT_EQ(again->intercept, fit->intercept);
}

TEST(TheilSen, MaxPairsBoundsTheWork) {
  std::vector<double> x, y;
  for (int i = 0; i < 1000; ++i) {
    x.push_back(i);
    y.push_back(7.0 * i);
  }
  std::optional<SlopeFit> fit = TheilSen(x, y, 500);
  ASSERT_TRUE(fit.has_value());
  EXPECT_LE(fit->pairs, 500u);
  EXPECT_DOUBLE_EQ(fit->slope, 7.0);
}

TEST(TheilSen, ResidualSigmaMeasuresTheNoise) {
  std::mt19937 random(3);
  std::normal_distribution<double> noise(0, 10);
  std::vector<double> x, y;
  for (int i = 0; i < 2000; ++i) {
    x.push_back(i);
    y.push_back(5.0 * i + noise(random));
  }
  std::optional<SlopeFit> fit = TheilSen(x, y);
  ASSERT_TRUE(fit.has_value());
  EXPECT_NEAR(RobustResidualSigma(x, y, *fit), 10, 1.5);
}

}  // namespace
}  // namespace stallscope
