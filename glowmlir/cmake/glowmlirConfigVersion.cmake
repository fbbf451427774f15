# find_package(glowmlir <version>) version check. The version is read from the package itself
# (glowmlir/__init__.py's __version__, the one place it is written). Compatible: this version or
# a newer one of the same major version, and while the major version is 0, of the same minor
# version too (a 0.x release may change glowmlir_add_bundle's arguments).
file(STRINGS "${CMAKE_CURRENT_LIST_DIR}/../__init__.py" _glowmlir_version_line REGEX "^__version__ = ")
string(REGEX REPLACE "^__version__ = \"([^\"]+)\".*" "\\1" PACKAGE_VERSION "${_glowmlir_version_line}")
string(REPLACE "." ";" _glowmlir_parts "${PACKAGE_VERSION}")
list(GET _glowmlir_parts 0 _glowmlir_major)
list(GET _glowmlir_parts 1 _glowmlir_minor)

set(PACKAGE_VERSION_COMPATIBLE FALSE)
set(PACKAGE_VERSION_EXACT FALSE)
if(NOT PACKAGE_FIND_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
elseif(PACKAGE_VERSION VERSION_GREATER_EQUAL PACKAGE_FIND_VERSION
       AND _glowmlir_major EQUAL PACKAGE_FIND_VERSION_MAJOR
       AND (NOT _glowmlir_major EQUAL 0 OR PACKAGE_FIND_VERSION_COUNT LESS 2
            OR _glowmlir_minor EQUAL PACKAGE_FIND_VERSION_MINOR))
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_VERSION VERSION_EQUAL PACKAGE_FIND_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
unset(_glowmlir_version_line)
unset(_glowmlir_parts)
unset(_glowmlir_major)
unset(_glowmlir_minor)
