// libarchive's functions that stallscope calls, looked up in the library on
// first use (core/lazy_library.h says why), under their own names: include
// this instead of <archive.h> and <archive_entry.h>. A function not listed
// here fails to link, which is the reminder to list it.
// Thread-safe.
#pragma once

#include <archive.h>
#include <archive_entry.h>

// Every function called, once.
#define STALLSCOPE_LIBARCHIVE_FUNCTIONS(X) \
  X(archive_entry_clear)                   \
  X(archive_entry_copy_pathname)           \
  X(archive_entry_filetype)                \
  X(archive_entry_free)                    \
  X(archive_entry_new)                     \
  X(archive_entry_pathname)                \
  X(archive_entry_set_filetype)            \
  X(archive_entry_set_mtime)               \
  X(archive_entry_set_pathname)            \
  X(archive_entry_set_perm)                \
  X(archive_entry_set_size)                \
  X(archive_entry_set_symlink)             \
  X(archive_entry_size)                    \
  X(archive_entry_symlink)                 \
  X(archive_error_string)                  \
  X(archive_read_data)                     \
  X(archive_read_free)                     \
  X(archive_read_new)                      \
  X(archive_read_next_header)              \
  X(archive_read_open_memory)              \
  X(archive_read_support_format_tar)       \
  X(archive_set_error)                     \
  X(archive_write_add_filter_gzip)         \
  X(archive_write_close)                   \
  X(archive_write_data)                    \
  X(archive_write_finish_entry)            \
  X(archive_write_free)                    \
  X(archive_write_header)                  \
  X(archive_write_new)                     \
  X(archive_write_open)                    \
  X(archive_write_set_bytes_in_last_block) \
  X(archive_write_set_bytes_per_block)     \
  X(archive_write_set_format_pax_restricted)

namespace stallscope {

struct LibArchiveApi {
#define STALLSCOPE_LIBARCHIVE_MEMBER(name) decltype(&::name) name = nullptr;
  STALLSCOPE_LIBARCHIVE_FUNCTIONS(STALLSCOPE_LIBARCHIVE_MEMBER)
#undef STALLSCOPE_LIBARCHIVE_MEMBER
};

// The table, filled on the first call (libarchive.so.13, Debian's
// libarchive13).
const LibArchiveApi& LibArchive();

}  // namespace stallscope

#ifndef STALLSCOPE_LIBARCHIVE_TABLE_ONLY
#define archive_entry_clear (::stallscope::LibArchive().archive_entry_clear)
#define archive_entry_copy_pathname (::stallscope::LibArchive().archive_entry_copy_pathname)
#define archive_entry_filetype (::stallscope::LibArchive().archive_entry_filetype)
#define archive_entry_free (::stallscope::LibArchive().archive_entry_free)
#define archive_entry_new (::stallscope::LibArchive().archive_entry_new)
#define archive_entry_pathname (::stallscope::LibArchive().archive_entry_pathname)
#define archive_entry_set_filetype (::stallscope::LibArchive().archive_entry_set_filetype)
#define archive_entry_set_mtime (::stallscope::LibArchive().archive_entry_set_mtime)
#define archive_entry_set_pathname (::stallscope::LibArchive().archive_entry_set_pathname)
#define archive_entry_set_perm (::stallscope::LibArchive().archive_entry_set_perm)
#define archive_entry_set_size (::stallscope::LibArchive().archive_entry_set_size)
#define archive_entry_set_symlink (::stallscope::LibArchive().archive_entry_set_symlink)
#define archive_entry_size (::stallscope::LibArchive().archive_entry_size)
#define archive_entry_symlink (::stallscope::LibArchive().archive_entry_symlink)
#define archive_error_string (::stallscope::LibArchive().archive_error_string)
#define archive_read_data (::stallscope::LibArchive().archive_read_data)
#define archive_read_free (::stallscope::LibArchive().archive_read_free)
#define archive_read_new (::stallscope::LibArchive().archive_read_new)
#define archive_read_next_header (::stallscope::LibArchive().archive_read_next_header)
#define archive_read_open_memory (::stallscope::LibArchive().archive_read_open_memory)
#define archive_read_support_format_tar (::stallscope::LibArchive().archive_read_support_format_tar)
#define archive_set_error (::stallscope::LibArchive().archive_set_error)
#define archive_write_add_filter_gzip (::stallscope::LibArchive().archive_write_add_filter_gzip)
#define archive_write_close (::stallscope::LibArchive().archive_write_close)
#define archive_write_data (::stallscope::LibArchive().archive_write_data)
#define archive_write_finish_entry (::stallscope::LibArchive().archive_write_finish_entry)
#define archive_write_free (::stallscope::LibArchive().archive_write_free)
#define archive_write_header (::stallscope::LibArchive().archive_write_header)
#define archive_write_new (::stallscope::LibArchive().archive_write_new)
#define archive_write_open (::stallscope::LibArchive().archive_write_open)
#define archive_write_set_bytes_in_last_block \
  (::stallscope::LibArchive().archive_write_set_bytes_in_last_block)
#define archive_write_set_bytes_per_block \
  (::stallscope::LibArchive().archive_write_set_bytes_per_block)
#define archive_write_set_format_pax_restricted \
  (::stallscope::LibArchive().archive_write_set_format_pax_restricted)
#endif
