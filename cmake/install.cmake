# Installing and packaging (docs/install.md), included from CMakeLists.txt.
#
# `cmake --install build --prefix P` (or `make install PREFIX=P`) lays out:
#   P/bin/stallscope
#   P/lib/stallscope/python/stallscope/   the Python hook (PYTHONPATH)
#   P/lib/stallscope/libstallscope_crc32c.so  its native CRC32C
#   P/lib/stallscope/libstallscope_mpi.so     the MPI plugin (where MPI was found)
#   P/share/man/man1/stallscope.1.gz, P/share/bash-completion/completions/stallscope
#   P/share/doc/stallscope/               README, docs/, LICENSE, copyright
#   P/share/stallscope/slurm/             prolog, epilog, task-prolog (Slurm)
# The binary finds lib/stallscope from its own location (/proc/self/exe:
# cli/hook_files.cc, dist/mpi_world.cc), so the whole prefix may be moved.
# The path "lib" is fixed on purpose (not a multiarch libdir): the binary
# looks exactly there.
set(STALLSCOPE_LIBDIR lib/stallscope)

if(STALLSCOPE_CLI)
  # The man page and the bash completion, written by the built binary from
  # the same command tree as --help (cli/help_pages.cc).
  set(STALLSCOPE_MAN ${CMAKE_BINARY_DIR}/stallscope.1)
  set(STALLSCOPE_COMPLETION ${CMAKE_BINARY_DIR}/stallscope.bash-completion)
  add_custom_command(
    OUTPUT ${STALLSCOPE_MAN} ${STALLSCOPE_MAN}.gz ${STALLSCOPE_COMPLETION}
    COMMAND sh -c "\"$1\" help --man-page > \"$2\" && gzip -9nf -k \"$2\" && \"$1\" help --bash-completion > \"$3\""
            sh $<TARGET_FILE:stallscope> ${STALLSCOPE_MAN} ${STALLSCOPE_COMPLETION}
    DEPENDS stallscope
    COMMENT "Writing stallscope(1) and the bash completion from the command table"
    VERBATIM)
  add_custom_target(stallscope_help_pages ALL DEPENDS ${STALLSCOPE_MAN}.gz ${STALLSCOPE_COMPLETION})

  install(TARGETS stallscope RUNTIME DESTINATION bin)
  install(FILES ${STALLSCOPE_MAN}.gz DESTINATION share/man/man1)
  install(FILES ${STALLSCOPE_COMPLETION} DESTINATION share/bash-completion/completions
          RENAME stallscope)
endif()
install(DIRECTORY python/stallscope DESTINATION ${STALLSCOPE_LIBDIR}/python
        FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
if(TARGET stallscope_crc32c)
  install(TARGETS stallscope_crc32c LIBRARY DESTINATION ${STALLSCOPE_LIBDIR})
endif()
if(TARGET stallscope_mpi)
  install(TARGETS stallscope_mpi LIBRARY DESTINATION ${STALLSCOPE_LIBDIR})
endif()
# Slurm's Prolog=, Epilog= and TaskProlog= scripts (docs/slurm.md); they
# find the binary at ../../../bin from their own place.
install(PROGRAMS deploy/slurm/prolog deploy/slurm/epilog deploy/slurm/task-prolog
        DESTINATION share/stallscope/slurm)
install(FILES README.md LICENSE packaging/copyright DESTINATION share/doc/stallscope)
install(DIRECTORY docs/ DESTINATION share/doc/stallscope/docs)

# The Debian package: `make deb` (cpack -G DEB in the build folder) writes
# stallscope_VERSION_ARCH.deb. Depends: what dpkg-shlibdeps finds for the
# binary and the CRC32C library (not for the MPI plugin: Open MPI is only a
# Recommends, and cluster / bench allreduce say so when it is missing), plus
# python3 for the hook; computed at packaging time (packaging/depends.cmake).
# The maintainer scripts byte-compile the hook and remove what that wrote.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME stallscope)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "stallscope")
set(CPACK_PACKAGE_CONTACT "stallscope maintainers <stallscope@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "finds why deep-learning training is slower than its hardware")
set(CPACK_PACKAGE_DESCRIPTION
    "stallscope records a training job with the host under it and says which layer (memory, io, network, distributed, code) holds it back, with the evidence. It includes a Python hook for PyTorch jobs and a Prometheus exporter.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS OFF)
# hwloc is optional too: without it the topology is read from sysfs
# (probe/hwloc_api.h).
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "openmpi-bin, libopenmpi3, libhwloc15 (>= 2.9.0)")
set(STALLSCOPE_HOOK_DIR ${CPACK_PACKAGING_INSTALL_PREFIX}/${STALLSCOPE_LIBDIR}/python)
configure_file(packaging/postinst.in ${CMAKE_BINARY_DIR}/packaging/postinst @ONLY
               FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
                                WORLD_READ WORLD_EXECUTE)
configure_file(packaging/prerm.in ${CMAKE_BINARY_DIR}/packaging/prerm @ONLY
               FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
                                WORLD_READ WORLD_EXECUTE)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${CMAKE_BINARY_DIR}/packaging/postinst ${CMAKE_BINARY_DIR}/packaging/prerm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(STALLSCOPE_SHLIBDEPS_FILES "")
if(STALLSCOPE_CLI)
  list(APPEND STALLSCOPE_SHLIBDEPS_FILES $<TARGET_FILE:stallscope>)
endif()
if(TARGET stallscope_crc32c)
  list(APPEND STALLSCOPE_SHLIBDEPS_FILES $<TARGET_FILE:stallscope_crc32c>)
endif()
file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/packaging/depends.cmake
     CONTENT "set(STALLSCOPE_SHLIBDEPS_FILES \"${STALLSCOPE_SHLIBDEPS_FILES}\")\nset(STALLSCOPE_PACKAGING_DIR \"${CMAKE_BINARY_DIR}/packaging\")\ninclude(\"${CMAKE_CURRENT_SOURCE_DIR}/packaging/depends.cmake\")\n")
set(CPACK_PROJECT_CONFIG_FILE ${CMAKE_BINARY_DIR}/packaging/depends.cmake)
include(CPack)
