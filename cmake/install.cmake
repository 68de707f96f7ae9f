# cmake/install.cmake: `cmake --install` and `cpack -G DEB` (DESIGN.md 17), included by
# the top CMakeLists.txt after the targets.
#   bin/                          the four binaries
#   ${SK_SYSTEMD_UNITDIR}/        seckill-front@.service, seckill-consumer.service,
#                                 seckill-reconciler.service + .timer
#   share/seckill/                seckill.env.example, front-main.env.example,
#                                 crontab.example, nginx/, prometheus/, grafana/
#   share/doc/seckill/            README.md, OPERATIONS.md, DESIGN.md
# The units and examples name the install directories of the prefix chosen at configure
# time (-DCMAKE_INSTALL_PREFIX, default /usr/local): `cmake --install --prefix P` moves the
# files, not the paths written inside them. scripts/package.sh configures with /usr.
#
# The package: a release build only. cpack refuses (cmake/cpack_project.cmake.in) a
# build with failpoints (SK_FAILPOINTS) or sanitizers (SK_SANITIZE), or another build
# type than Release. Dependencies come from the binaries (dpkg-shlibdeps) plus adduser
# for the maintainer scripts of deploy/debian/.
include(GNUInstallDirs)

set(SK_SYSTEMD_UNITDIR "lib/systemd/system" CACHE STRING
  "systemd unit directory, relative to the install prefix or absolute")
set(SK_BIN_DIR ${CMAKE_INSTALL_FULL_BINDIR})
set(SK_SHARE_DIR ${CMAKE_INSTALL_FULL_DATADIR}/seckill)
set(SK_DOC_DIR ${CMAKE_INSTALL_FULL_DOCDIR})

install(TARGETS seckill-front seckill-consumer seckill-reconciler seckill-admin
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

set(SK_DEPLOY ${CMAKE_SOURCE_DIR}/deploy)
set(SK_GEN ${CMAKE_BINARY_DIR}/deploy)
foreach(unit seckill-front@.service seckill-consumer.service seckill-reconciler.service)
  configure_file(${SK_DEPLOY}/systemd/${unit}.in ${SK_GEN}/systemd/${unit} @ONLY)
  install(FILES ${SK_GEN}/systemd/${unit} DESTINATION ${SK_SYSTEMD_UNITDIR})
endforeach()
install(FILES ${SK_DEPLOY}/systemd/seckill-reconciler.timer DESTINATION ${SK_SYSTEMD_UNITDIR})

foreach(example seckill.env.example front-main.env.example)
  configure_file(${SK_DEPLOY}/${example} ${SK_GEN}/${example} @ONLY)
  install(FILES ${SK_GEN}/${example} DESTINATION ${CMAKE_INSTALL_DATADIR}/seckill)
endforeach()
install(FILES ${SK_DEPLOY}/crontab.example DESTINATION ${CMAKE_INSTALL_DATADIR}/seckill)
install(FILES ${SK_DEPLOY}/nginx/seckill-gateway.conf DESTINATION ${CMAKE_INSTALL_DATADIR}/seckill/nginx)
install(FILES ${SK_DEPLOY}/prometheus/prometheus.yml ${SK_DEPLOY}/prometheus/seckill.rules.yml
  DESTINATION ${CMAKE_INSTALL_DATADIR}/seckill/prometheus)
install(PROGRAMS ${SK_DEPLOY}/prometheus/reconciler-textfile.sh
  DESTINATION ${CMAKE_INSTALL_DATADIR}/seckill/prometheus)
install(FILES ${SK_DEPLOY}/grafana/seckill-sale.json DESTINATION ${CMAKE_INSTALL_DATADIR}/seckill/grafana)
install(FILES ${CMAKE_SOURCE_DIR}/README.md ${CMAKE_SOURCE_DIR}/docs/OPERATIONS.md
  ${CMAKE_SOURCE_DIR}/docs/DESIGN.md DESTINATION ${CMAKE_INSTALL_DOCDIR})

# ---- cpack -G DEB
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME seckill)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "flash-sale order pipeline (HTTP front, Kafka consumer, reconciler)")
set(CPACK_PACKAGE_DESCRIPTION
  "seckill admits flash-sale purchases atomically in Redis, publishes them to Kafka and\n\
turns them into orders in MariaDB/MySQL, the book of record. This package holds\n\
seckill-front, seckill-consumer, seckill-reconciler and seckill-admin, their systemd\n\
units and example configuration; it never starts a service nor touches a database.")
set(CPACK_PACKAGE_CONTACT "seckill maintainers <seckill@localhost>")
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  ${SK_DEPLOY}/debian/postinst ${SK_DEPLOY}/debian/prerm ${SK_DEPLOY}/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
set(CPACK_SOURCE_IGNORE_FILES "/build[^/]*/;/\\\\.git/")
set(SK_CPACK_BUILD_TYPE ${CMAKE_BUILD_TYPE})
configure_file(${CMAKE_SOURCE_DIR}/cmake/cpack_project.cmake.in ${CMAKE_BINARY_DIR}/cpack_project.cmake @ONLY)
set(CPACK_PROJECT_CONFIG_FILE ${CMAKE_BINARY_DIR}/cpack_project.cmake)
include(CPack)
