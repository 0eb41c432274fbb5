// What launchers and log systems put around the lines of an NCCL log, and how
// to see past it: the parser (formats/nccl_log/nccl_log.h) reads NCCL's own
// "host:pid:tid [dev] NCCL INFO ..." and the lines around it only after this
// is stripped.
//
// A line copied out of a real job may carry, in front and in any order:
// timestamps (ISO 8601 with a fraction and a zone, "2024-03-04 05:06:07",
// ctime's "Mon Jan  1 01:02:03 2024", syslog's "Jan  1 01:02:03", a bare
// "05:06:07.123", bracketed or not, glued to the next token or not); a
// launcher's tag (Open MPI --tag-output "[1,5]<stdout>:", SLURM --label
// "3: ", pdsh "nodeA: " and "10.1.2.3: ", a global-rank bracket "[3] ",
// torchrun/DeepSpeed "[rank3]:" and "[default3]:", Ray "(pid=123) " and
// "(RayTrainWorker pid=123, ip=10.0.0.5) "); ANSI colour codes, or their
// residue "[0m" when the escape byte was lost; Kubernetes/k9s box-drawing
// borders and padding. Behind: Ray's " [repeated 7x across cluster]", a
// border, colour residue. The launcher's tag names the process the way the
// launcher sees it (the MPI process, not the NCCL rank), which is how lines
// NCCL printed without its own prefix (the bare "NCCL version", PyTorch's
// lines) are given to a process. Pure; no allocation except WithoutEscapes
// and ValidUtf8.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace stallscope {

// The decorations in front of a line.
struct LineHead {
  size_t content = 0;      // where the line's own text starts
  uint64_t tag_key = 0;    // the launcher tags together, hashed; 0: no tag
  uint64_t outer_key = 0;  // the first tag alone (an inner one may differ by program)
  std::string_view tag;    // the first tag as printed: "[1,5]<stdout>:", "3:", "nodeA:"
  std::string_view host;   // a host a tag names (pdsh's, Ray's ip=); empty if none
  int64_t pid = 0;         // Ray's pid=; 0 if none
  bool timestamp = false;  // a timestamp was among them
};

// Reads every decoration at the start of `line` (at most 16).
LineHead ReadLineHead(std::string_view line);
// The length of a timestamp at the start of `s` (bracketed or not), 0 if
// none. It does not include a space after it.
size_t TimestampLength(std::string_view s);
// The host in a host:pid:tid token's host part, whatever was glued in front
// of it: "[1,0]<stdout>:nodeB" -> "nodeB", "2024-01-01T01:02:03.456+00:00nodeD"
// -> "nodeD", "\xe2\x94\x82nodeA" -> "nodeA". Empty when nothing is left.
std::string_view NcclHostOf(std::string_view glued);
// Whether c may be part of a host name as NCCL prints it: [A-Za-z0-9._-],
// by table (it runs on every byte of every host).
struct HostCharTable {
  bool ok[256] = {};
  constexpr HostCharTable() {
    for (int c = 'a'; c <= 'z'; ++c) ok[c] = true;
    for (int c = 'A'; c <= 'Z'; ++c) ok[c] = true;
    for (int c = '0'; c <= '9'; ++c) ok[c] = true;
    ok[static_cast<unsigned char>('-')] = ok[static_cast<unsigned char>('_')] =
        ok[static_cast<unsigned char>('.')] = true;
  }
};
inline constexpr HostCharTable kHostChars;
inline bool IsHostChar(char c) { return kHostChars.ok[static_cast<unsigned char>(c)]; }
// `line` without what trails it: spaces, a border, colour residue, and Ray's
// " [repeated Nx across cluster]" (N is added to *folded).
std::string_view StripLineTail(std::string_view line, uint64_t* folded);
// ANSI escape sequences ("\x1b[0;32m", "\x1b]...\x07") removed.
std::string WithoutEscapes(std::string_view line);
// `s` as valid UTF-8: each byte that does not begin or continue a well-formed
// sequence becomes U+FFFD.
std::string ValidUtf8(std::string_view s);

}  // namespace stallscope
