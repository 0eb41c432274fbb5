// The meanings of the common NVIDIA Xid numbers (see kernel_events.h).
#include "sample/kernel_events.h"

namespace stallscope {

std::string_view XidMeaning(int xid) {
  switch (xid) {
    case 13:
      return "graphics engine exception (often an out-of-range access in a kernel)";
    case 31:
      return "GPU memory page fault (an illegal address, usually the application's)";
    case 43:
      return "GPU stopped processing (the application's channel was reset)";
    case 45:
      return "preemptive cleanup after earlier errors (the process was ended)";
    case 48:
      return "double-bit ECC error (uncorrectable memory error)";
    case 61:
      return "internal micro-controller breakpoint/warning";
    case 62:
      return "internal micro-controller halt";
    case 63:
      return "ECC page retirement or row remapping recorded";
    case 64:
      return "ECC page retirement or row remapping failed";
    case 74:
      return "NVLink error";
    case 79:
      return "GPU has fallen off the bus";
    case 92:
      return "high single-bit ECC error rate";
    case 94:
      return "contained ECC error (the affected application must restart)";
    case 95:
      return "uncontained ECC error (every application on the GPU is affected; reset it)";
    default:
      return {};
  }
}

bool XidNeedsReset(int xid) { return xid == 48 || xid == 64 || xid == 79 || xid == 95; }

bool XidUsuallyApplication(int xid) { return xid == 13 || xid == 31 || xid == 43 || xid == 45; }

}  // namespace stallscope
