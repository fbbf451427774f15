# glowmlir's CMake package: compile a model into a Glow bundle at build time and link it.
#
#   find_package(glowmlir 0.1 REQUIRED CONFIG)   # glowmlir_DIR: the output of `glow-compile -print-cmake-dir`
#
#   glowmlir_add_bundle(<target>
#     MODEL <model> [<weights>]      ONNX (.onnx, .onnxtxt), TFLite (.tflite) or Caffe2 (a directory,
#                                    or its net and weights files)
#     [NETWORK_NAME <name>]          the bundle's name: its files, entry point and macro prefix
#                                    (default: the model file's name, as glow-compile names it)
#     [PROFILE <profile.yaml>]       quantize with a glow-profile profile (-load-profile)
#     [OPTIONS <option>...]          more glow-compile options in Glow's spelling, e.g. -mcpu=cortex-m7
#                                    -float-abi=hard -use-cmsis -opt-level=Os
#     [WEIGHTS INCLUDE|LINK|FILE]    how the program gets the constant weights (default INCLUDE):
#                                    INCLUDE  your C file #includes <name>.weights.txt into its array
#                                    LINK     the target also holds <name>_weights, the bytes of
#                                             <name>.weights.bin (declared in <name>_weights.h)
#                                    FILE     nothing is linked; the program reads <name>.weights.bin
#     [WEIGHTS_SECTION <section>]    with LINK: the weights' section (default .rodata.<name>_weights)
#     [OUTPUT_DIR <dir>]             where the bundle is written (default <binary dir>/<target>)
#     [DEPENDS <file>...])           more files whose change recompiles the bundle
#
# <target> is a static library holding <name>.o (and with LINK the weights): link it to the
# program, whose sources then find <name>.h (and <name>.weights.txt) on their include path.
# glow-compile runs at build time, again whenever the model, the profile, a DEPENDS file,
# glow-compile itself or the command line (NETWORK_NAME, OPTIONS, ... : written to a file that
# changes only when they do) has changed. Its target properties GLOWMLIR_BUNDLE_NAME,
# GLOWMLIR_BUNDLE_DIR, GLOWMLIR_HEADER, GLOWMLIR_OBJECT, GLOWMLIR_WEIGHTS_BIN and
# GLOWMLIR_WEIGHTS_TXT name the bundle and its files.
#
# Also set here: GLOWMLIR_VERSION, GLOW_COMPILE (the glow-compile program, a cache variable:
# found beside the Python installation holding this package, else on the PATH) and
# GLOWMLIR_HARNESS_DIR (the start-up code and linker script template of glowmlir's QEMU boards,
# which the examples under examples/cmake reuse).

include_guard(GLOBAL)
if(CMAKE_VERSION VERSION_LESS 3.20)
  message(FATAL_ERROR "glowmlir: CMake 3.20 or newer is needed (this is ${CMAKE_VERSION})")
endif()

get_filename_component(GLOWMLIR_PACKAGE_DIR "${CMAKE_CURRENT_LIST_DIR}" DIRECTORY)
set(GLOWMLIR_HARNESS_DIR "${GLOWMLIR_PACKAGE_DIR}/runtime/embedded")
include("${CMAKE_CURRENT_LIST_DIR}/glowmlirConfigVersion.cmake")
set(GLOWMLIR_VERSION "${PACKAGE_VERSION}")
set(glowmlir_VERSION "${PACKAGE_VERSION}")

# glow-compile: the scripts directory of the Python installation this package is in (a venv's
# bin/, ~/.local/bin, /usr/local/bin; Scripts\ on Windows), then the PATH.
get_filename_component(_glowmlir_site "${GLOWMLIR_PACKAGE_DIR}" DIRECTORY)
get_filename_component(_glowmlir_site_name "${_glowmlir_site}" NAME)
set(_glowmlir_hints "")
if(_glowmlir_site_name MATCHES "^(site|dist)-packages$")
  get_filename_component(_glowmlir_posix_prefix "${_glowmlir_site}/../../.." ABSOLUTE)  # lib/pythonX.Y/site-packages
  get_filename_component(_glowmlir_windows_prefix "${_glowmlir_site}/../.." ABSOLUTE)  # Lib\site-packages
  list(APPEND _glowmlir_hints "${_glowmlir_posix_prefix}/bin" "${_glowmlir_windows_prefix}/Scripts")
endif()
find_program(GLOW_COMPILE glow-compile HINTS ${_glowmlir_hints} NO_CMAKE_FIND_ROOT_PATH
             DOC "glowmlir's glow-compile, run by glowmlir_add_bundle")
unset(_glowmlir_site)
unset(_glowmlir_site_name)
unset(_glowmlir_hints)
unset(_glowmlir_posix_prefix)
unset(_glowmlir_windows_prefix)

# Writes `content` to `path` only when it differs from what is there, so that a file a build
# step depends on keeps its time stamp while it stays the same.
function(_glowmlir_write_if_changed path content)
  set(scratch "${path}.new")
  file(WRITE "${scratch}" "${content}")
  configure_file("${scratch}" "${path}" COPYONLY)
  file(REMOVE "${scratch}")
endfunction()

function(glowmlir_add_bundle target)
  set(where "glowmlir_add_bundle(${target})")
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "NETWORK_NAME;PROFILE;WEIGHTS;WEIGHTS_SECTION;OUTPUT_DIR"
                        "MODEL;OPTIONS;DEPENDS")
  if(arg_UNPARSED_ARGUMENTS)
    list(GET arg_UNPARSED_ARGUMENTS 0 unknown)
    message(FATAL_ERROR "${where}: unknown argument \"${unknown}\" (arguments: MODEL, NETWORK_NAME, PROFILE, "
                        "OPTIONS, WEIGHTS, WEIGHTS_SECTION, OUTPUT_DIR, DEPENDS)")
  endif()
  foreach(keyword IN LISTS arg_KEYWORDS_MISSING_VALUES)
    if(NOT keyword MATCHES "^(OPTIONS|DEPENDS)$")  # may be empty lists: OPTIONS ${MORE_OPTIONS}
      message(FATAL_ERROR "${where}: ${keyword} needs a value")
    endif()
  endforeach()
  if(NOT GLOW_COMPILE)
    message(FATAL_ERROR "${where}: glow-compile not found: install glowmlir (pip install glowmlir) in the Python "
                        "that holds this CMake package, or give its path with -DGLOW_COMPILE=<path>")
  endif()

  # The model: one path (a file, or a Caffe2 directory) or a Caffe2 net and weights pair.
  list(LENGTH arg_MODEL model_count)
  if(model_count EQUAL 0)
    message(FATAL_ERROR "${where}: MODEL <model file> is missing")
  elseif(model_count GREATER 2)
    message(FATAL_ERROR "${where}: MODEL takes one model (or a Caffe2 net and weights: two files)")
  endif()
  set(models "")
  set(model_files "")
  foreach(model IN LISTS arg_MODEL)
    get_filename_component(model "${model}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    if(NOT EXISTS "${model}")
      message(FATAL_ERROR "${where}: MODEL \"${model}\" not found")
    endif()
    list(APPEND models "${model}")
    if(IS_DIRECTORY "${model}")  # a Caffe2 directory: its files
      file(GLOB directory_files CONFIGURE_DEPENDS "${model}/*")
      list(APPEND model_files ${directory_files})
    else()
      list(APPEND model_files "${model}")
    endif()
  endforeach()

  # The bundle's name, as glow-compile would choose it (Glow's legalizeName of the file's name).
  if(arg_NETWORK_NAME)
    set(name "${arg_NETWORK_NAME}")
  else()
    list(GET models 0 first_model)
    if(IS_DIRECTORY "${first_model}")
      get_filename_component(name "${first_model}" NAME)
    else()
      get_filename_component(name "${first_model}" NAME_WLE)
    endif()
    string(REGEX REPLACE "[^A-Za-z0-9_]" "_" name "${name}")
    if(name MATCHES "^[0-9]" OR name STREQUAL "")
      set(name "A${name}")
    endif()
  endif()
  if(NOT name MATCHES "^[A-Za-z][A-Za-z0-9_]*$")
    message(FATAL_ERROR "${where}: NETWORK_NAME \"${name}\": expected a C name (letters, digits and _, "
                        "a letter first)")
  endif()
  string(TOUPPER "${name}" upper)

  foreach(option IN LISTS arg_OPTIONS)
    if(option MATCHES "^--?(model|m|model-input-name|emit-bundle|network-name|load-profile)(=|$)")
      message(FATAL_ERROR "${where}: OPTIONS: \"${option}\" is an argument of glowmlir_add_bundle "
                          "(MODEL, OUTPUT_DIR, NETWORK_NAME, PROFILE)")
    endif()
  endforeach()

  if(NOT arg_WEIGHTS)
    set(arg_WEIGHTS INCLUDE)
  endif()
  if(NOT arg_WEIGHTS MATCHES "^(INCLUDE|LINK|FILE)$")
    message(FATAL_ERROR "${where}: WEIGHTS \"${arg_WEIGHTS}\": expected INCLUDE, LINK or FILE")
  endif()
  if(arg_WEIGHTS_SECTION AND NOT arg_WEIGHTS STREQUAL "LINK")
    message(FATAL_ERROR "${where}: WEIGHTS_SECTION needs WEIGHTS LINK")
  endif()
  if(NOT arg_WEIGHTS_SECTION)
    set(arg_WEIGHTS_SECTION ".rodata.${name}_weights")
  endif()

  if(arg_OUTPUT_DIR)
    get_filename_component(directory "${arg_OUTPUT_DIR}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  else()
    set(directory "${CMAKE_CURRENT_BINARY_DIR}/${target}")
  endif()
  set(object "${directory}/${name}.o")
  set(header "${directory}/${name}.h")
  set(weights_bin "${directory}/${name}.weights.bin")
  set(weights_txt "${directory}/${name}.weights.txt")

  set(command "${GLOW_COMPILE}" -backend=CPU)
  foreach(model IN LISTS models)
    list(APPEND command "-model=${model}")
  endforeach()
  list(APPEND command "-network-name=${name}" "-emit-bundle=${directory}")
  set(depends ${model_files} ${arg_DEPENDS})
  if(arg_PROFILE)
    get_filename_component(profile "${arg_PROFILE}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND command "-load-profile=${profile}")
    list(APPEND depends "${profile}")
  endif()
  list(APPEND command ${arg_OPTIONS})

  # The command line (and glowmlir's version) in a file that changes only when they do: a new
  # option recompiles the bundle with every generator (Make does not compare command lines).
  set(command_file "${CMAKE_CURRENT_BINARY_DIR}/CMakeFiles/glowmlir/${target}.command")
  list(JOIN command "\n" command_lines)
  _glowmlir_write_if_changed("${command_file}" "glowmlir ${GLOWMLIR_VERSION}\n${command_lines}\n")
  list(APPEND depends "${command_file}")
  if(IS_ABSOLUTE "${GLOW_COMPILE}" AND EXISTS "${GLOW_COMPILE}")  # a reinstalled glowmlir
    list(APPEND depends "${GLOW_COMPILE}")
  endif()

  list(GET models 0 first_model)
  add_custom_command(
    OUTPUT "${object}" "${header}" "${weights_bin}" "${weights_txt}"
    COMMAND ${command}
    DEPENDS ${depends}
    WORKING_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}"
    COMMENT "glowmlir: compiling ${first_model} into the bundle ${name}"
    VERBATIM)
  set_source_files_properties("${object}" PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)

  set(sources "${object}" "${header}")
  if(arg_WEIGHTS STREQUAL "LINK")
    # The weights as a symbol: weights.bin pulled in by the assembler (.incbin), not compiled
    # from weights.txt (the same bytes, and megabytes of weights assemble in no time).
    set(weights_header "${directory}/${name}_weights.h")
    set(weights_source "${directory}/${name}_weights.c")
    _glowmlir_write_if_changed("${weights_header}" "\
/* Generated by glowmlir_add_bundle(${target} ... WEIGHTS LINK): the constant weights of bundle
   ${name}, the bytes of ${name}.weights.bin. Pass ${name}_weights as constantWeight. */
#ifndef ${upper}_WEIGHTS_H
#define ${upper}_WEIGHTS_H
#include <stdint.h>
#include \"${name}.h\"
#ifdef __cplusplus
extern \"C\" {
#endif
extern const uint8_t ${name}_weights[${upper}_CONSTANT_MEM_SIZE];
#ifdef __cplusplus
}
#endif
#endif
")
    _glowmlir_write_if_changed("${weights_source}" "\
/* Generated by glowmlir_add_bundle(${target} ... WEIGHTS LINK): ${name}.weights.bin in section
   ${arg_WEIGHTS_SECTION}, aligned to ${upper}_MEM_ALIGN (GNU assembler, ELF). */
#include \"${name}_weights.h\"

#define GLOWMLIR_STRING(x) #x
#define GLOWMLIR_VALUE(x) GLOWMLIR_STRING(x)
__asm__(\".pushsection ${arg_WEIGHTS_SECTION},\\\"a\\\"\\n\"
        \".balign \" GLOWMLIR_VALUE(${upper}_MEM_ALIGN) \"\\n\"
        \".global ${name}_weights\\n\"
        \".type ${name}_weights, %object\\n\"
        \"${name}_weights:\\n\"
        \".incbin \\\"${weights_bin}\\\"\\n\"
        \".size ${name}_weights, . - ${name}_weights\\n\"
        \".popsection\\n\");
")
    set_source_files_properties("${weights_source}" PROPERTIES OBJECT_DEPENDS "${weights_bin};${header}")
    list(APPEND sources "${weights_header}" "${weights_source}")
  endif()

  add_library(${target} STATIC ${sources})
  set_target_properties(${target} PROPERTIES
    LINKER_LANGUAGE C
    GLOWMLIR_BUNDLE_NAME "${name}"
    GLOWMLIR_BUNDLE_DIR "${directory}"
    GLOWMLIR_HEADER "${header}"
    GLOWMLIR_OBJECT "${object}"
    GLOWMLIR_WEIGHTS_BIN "${weights_bin}"
    GLOWMLIR_WEIGHTS_TXT "${weights_txt}")
  target_include_directories(${target} PUBLIC "${directory}")
  if(NOT MSVC)
    target_link_libraries(${target} PUBLIC m)  # a bundle may call expf and friends
  endif()
endfunction()
