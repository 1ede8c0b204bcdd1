# CLI11, trtet-run's argument parser: Debian's libcli11-dev (header-only). A GPU machine without
# the package finds the headers in .deps/sysroot/usr/include (apt-get download libcli11-dev, dpkg -x).
# Sets TRTET_CLI11_INCLUDE_DIR (cached); included by tools/ and tests/tools/.
find_path(TRTET_CLI11_INCLUDE_DIR CLI/CLI.hpp HINTS "${PROJECT_SOURCE_DIR}/.deps/sysroot/usr/include")
