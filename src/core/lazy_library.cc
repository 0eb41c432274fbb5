// The lazy library: opened once, on the first symbol asked for (see lazy_library.h).
#include "core/lazy_library.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

namespace stallscope {
namespace {

[[noreturn]] void Missing(const char* what, const char* package) {
  const char* why = dlerror();
  std::fprintf(stderr,
               "stallscope: this command needs %s, which cannot be loaded (%s); "
               "install the Debian package %s\n",
               what, why != nullptr ? why : "not found", package);
  std::exit(2);
}

}  // namespace

void* LazyLibrary::Open() {
  std::call_once(opened_, [this] {
    handle_ = dlopen(soname_, RTLD_NOW | (global_ ? RTLD_GLOBAL : RTLD_LOCAL));
  });
  return handle_;
}

void* LazyLibrary::Find(const char* name, std::string& why) {
  Open();
  void* address = handle_ != nullptr ? dlsym(handle_, name) : nullptr;
  if (address == nullptr) {
    const char* error = dlerror();
    why = std::string(handle_ == nullptr ? soname_ : name) + ": " +
          (error != nullptr ? error : "not found") + " (Debian package " + package_ + ")";
  }
  return address;
}

void* LazyLibrary::Symbol(const char* name) {
  if (Open() == nullptr) Missing(soname_, package_);
  void* address = dlsym(handle_, name);
  if (address == nullptr) Missing(name, package_);
  return address;
}

}  // namespace stallscope
