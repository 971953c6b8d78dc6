# The Debian package (docs/operations.md, "Install as a Debian package"): `cmake --build build
# --target package` writes build/gather_<version>_<arch>.deb with /usr/bin/gather, gather(1), the
# example /etc/gather/gather.json (a conffile) and /lib/systemd/system/gather.service.
# Depends comes from dpkg-shlibdeps (the libraries the binary links), so dpkg-dev and file are
# needed to package; help2man for the man page. The plain build needs none of them: without them
# the package target stops with the name of what is missing (cpack_checks.cmake.in).
# The install rules are the package's layout: /etc and /lib/systemd are absolute, so a plain
# `cmake --install` would write (and overwrite) them too; install the package instead.
set(GATHER_PACKAGING_DIR ${CMAKE_CURRENT_LIST_DIR})

install(TARGETS gather RUNTIME DESTINATION bin)
install(FILES ${GATHER_PACKAGING_DIR}/gather.service DESTINATION /lib/systemd/system)
install(FILES ${GATHER_PACKAGING_DIR}/gather.json DESTINATION /etc/gather)

# gather(1) from `gather --help` (packaging/man_page.cmake), remade when the binary changes. Not in
# a sanitizer build: that build is never packaged (cpack_checks.cmake.in).
find_program(GATHER_HELP2MAN help2man)
set(GATHER_MAN_PAGE ${CMAKE_BINARY_DIR}/packaging/gather.1.gz)
if(GATHER_HELP2MAN AND GATHER_SANITIZE STREQUAL "")
  add_custom_command(
    OUTPUT ${GATHER_MAN_PAGE}
    COMMAND ${CMAKE_COMMAND} -DGATHER=$<TARGET_FILE:gather> -DHELP2MAN=${GATHER_HELP2MAN}
            -DINCLUDE=${GATHER_PACKAGING_DIR}/gather.h2m -DOUT=${GATHER_MAN_PAGE}
            -P ${GATHER_PACKAGING_DIR}/man_page.cmake
    DEPENDS gather ${GATHER_PACKAGING_DIR}/gather.h2m ${GATHER_PACKAGING_DIR}/man_page.cmake
    COMMENT "Writing gather(1) with help2man"
    VERBATIM)
  add_custom_target(gather_man ALL DEPENDS ${GATHER_MAN_PAGE})
  install(FILES ${GATHER_MAN_PAGE} DESTINATION share/man/man1)
endif()
find_program(GATHER_DPKG_SHLIBDEPS dpkg-shlibdeps)
find_program(GATHER_FILE file)
find_program(GATHER_DPKG dpkg)
if(GATHER_DPKG)
  execute_process(COMMAND ${GATHER_DPKG} --print-architecture
    OUTPUT_VARIABLE GATHER_DEB_ARCH OUTPUT_STRIP_TRAILING_WHITESPACE)
else()
  set(GATHER_DEB_ARCH unknown)
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME gather)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "Gather maintainers <gather@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "actor-model scatter-gather HTTP gateway")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "\
One inbound request fans out in parallel to the downstream services a route names
and comes back within its budget with whatever arrived, every part marked with what
happened to it. Ships a systemd unit (gather.service) and an example configuration.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE ${GATHER_DEB_ARCH})
set(CPACK_DEBIAN_FILE_NAME ${CPACK_PACKAGE_NAME}_${PROJECT_VERSION}_${GATHER_DEB_ARCH}.deb)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  ${GATHER_PACKAGING_DIR}/debian/conffiles ${GATHER_PACKAGING_DIR}/debian/postinst
  ${GATHER_PACKAGING_DIR}/debian/prerm ${GATHER_PACKAGING_DIR}/debian/postrm)
set(CPACK_STRIP_FILES ON)
set(GATHER_DEB_FILE ${CMAKE_BINARY_DIR}/${CPACK_DEBIAN_FILE_NAME})

configure_file(${GATHER_PACKAGING_DIR}/cpack_checks.cmake.in
  ${CMAKE_BINARY_DIR}/packaging/cpack_checks.cmake @ONLY)
set(CPACK_PROJECT_CONFIG_FILE ${CMAKE_BINARY_DIR}/packaging/cpack_checks.cmake)
include(CPack)
