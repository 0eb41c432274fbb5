// The lookups every rule test makes in a list of findings: a finding by id
// (the first, all of them, or a copy when the list is a temporary), a piece
// of evidence by name (the value, or typed, failing the test when missing),
// and the ids of a list for a failure message. One copy for every test file
// (they were eight); header-only, inline.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "sample/finding.h"

namespace stallscope {

inline std::vector<const Finding*> FindAll(const std::vector<Finding>& findings,
                                           std::string_view id) {
  std::vector<const Finding*> out;
  for (const Finding& f : findings) {
    if (f.id == id) out.push_back(&f);
  }
  return out;
}

// The first finding with this id; null when there is none.
inline const Finding* Find(const std::vector<Finding>& findings, std::string_view id) {
  for (const Finding& f : findings) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

// The same as a copy, for a list that is a temporary.
inline std::optional<Finding> FindCopy(const std::vector<Finding>& findings, std::string_view id) {
  if (const Finding* f = Find(findings, id)) return *f;
  return std::nullopt;
}

// Every finding with this id, as copies.
inline std::vector<Finding> FindAllCopies(const std::vector<Finding>& findings,
                                          std::string_view id) {
  std::vector<Finding> out;
  for (const Finding& f : findings) {
    if (f.id == id) out.push_back(f);
  }
  return out;
}

// A finding's evidence by name; null when it has none of that name.
inline const Evidence* Find(const Finding& f, std::string_view name) {
  for (const Evidence& e : f.evidence) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

inline const EvidenceValue* EvidenceValueOf(const Finding& f, std::string_view name) {
  const Evidence* e = Find(f, name);
  return e ? &e->value : nullptr;
}

// The evidence as a T; the test fails (and T{} comes back) when it is missing.
template <typename T>
T EvidenceOf(const Finding& f, std::string_view name) {
  const EvidenceValue* v = EvidenceValueOf(f, name);
  if (!v) {
    ADD_FAILURE() << "no evidence " << name << " in " << f.id;
    return T{};
  }
  return std::get<T>(*v);
}

// EvidenceOf<double>, -1 when missing (after the failure).
inline double EvidenceDouble(const Finding& f, std::string_view name) {
  if (!EvidenceValueOf(f, name)) {
    ADD_FAILURE() << "no evidence " << name;
    return -1;
  }
  return EvidenceOf<double>(f, name);
}

// "io.input_bound(critical) memory.swap_active(warning) "
inline std::string Ids(const std::vector<Finding>& findings) {
  std::string out;
  for (const Finding& f : findings) {
    out += f.id + "(" + std::string(SeverityName(f.severity)) + ") ";
  }
  return out;
}

}  // namespace stallscope
