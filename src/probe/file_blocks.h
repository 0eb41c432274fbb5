// A file read to its end as a series of blocks, for the parsers that stream
// big logs (nccl-log reads 1 GB ones). A regular file is mapped, window by
// window, so its bytes are read where the page cache holds them, with no
// copy (read() of a 1 GB log cost a quarter of nccl-log's time); a pipe, a
// terminal or a file that grows while it is read is read with read(). A
// thread of its own maps the next window and unmaps the last one while the
// caller reads (the kernel's share of the read, off the caller's core); it
// touches no byte, receives no signal and ends with the read.
//
// A mapped file that another process truncates while it is read would end
// the process with SIGBUS; here the vanished pages read as zeros and the
// read fails with an error that names the file, so nothing is reported from
// a half-read log. The owner is the caller: ReadFileBlocks returns only when
// the file is read, or on the first error (the callback's or its own).
#pragma once

#include <cstddef>
#include <functional>
#include <string_view>

#include "core/status.h"

namespace stallscope {

// The largest block the callback is given.
inline constexpr size_t kFileBlockBytes = 1 << 20;

// Every byte of `fd`, from its current offset, in order, in blocks of at
// most kFileBlockBytes; `name` names the file in errors. A block ends
// anywhere, also mid-line. Not reentrant across threads (one mapped read at
// a time per process; others wait).
Status ReadFileBlocks(int fd, std::string_view name,
                      const std::function<Status(std::string_view)>& block);

}  // namespace stallscope
