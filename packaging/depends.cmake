# Run by cpack (CPACK_PROJECT_CONFIG_FILE): the package's Depends, from
# dpkg-shlibdeps over the binary and the hook's CRC32C library only (the MPI
# plugin's Open MPI is a Recommends), the two libraries opened on first use
# that their commands need (hwloc, opened the same way, is a Recommends: the
# topology is read from sysfs without it), then python3 for the hook.
if(CPACK_GENERATOR STREQUAL "DEB")
  find_program(DPKG_SHLIBDEPS dpkg-shlibdeps)
  if(NOT DPKG_SHLIBDEPS)
    message(FATAL_ERROR "dpkg-shlibdeps not found: apt-get install dpkg-dev")
  endif()
  # dpkg-shlibdeps wants a debian/control in its working directory.
  file(WRITE ${STALLSCOPE_PACKAGING_DIR}/shlibdeps/debian/control
       "Source: stallscope\n\nPackage: stallscope\nArchitecture: any\n")
  execute_process(
    COMMAND ${DPKG_SHLIBDEPS} -O ${STALLSCOPE_SHLIBDEPS_FILES}
    WORKING_DIRECTORY ${STALLSCOPE_PACKAGING_DIR}/shlibdeps
    OUTPUT_VARIABLE shlibs ERROR_VARIABLE shlibs_err RESULT_VARIABLE rc
    OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "dpkg-shlibdeps failed: ${shlibs_err}")
  endif()
  string(REGEX REPLACE "^shlibs:Depends=" "" shlibs "${shlibs}")
  # libarchive and libmicrohttpd are opened on first use (dlopen:
  # core/lazy_library.h), so dpkg-shlibdeps does not see them: their Debian
  # 12 shlibs entries, named here.
  set(CPACK_DEBIAN_PACKAGE_DEPENDS
      "${shlibs}, libarchive13 (>= 3.6.2), libmicrohttpd12 (>= 0.9.75), python3")
  message(STATUS "Depends: ${CPACK_DEBIAN_PACKAGE_DEPENDS}")
endif()
