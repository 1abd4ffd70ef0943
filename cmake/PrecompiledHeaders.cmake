# Precompiled <QtTest> for the test executables: QtTest is the heaviest header a test parses,
# and precompiling it once per group of tests halves a typical test file's compile time. (For
# the libraries it does not pay: GCC takes seconds to load a precompiled Qt or JSON header,
# more than their files spend parsing what they include.)
#
# GCC checks each use against the macros and flags the header was built with and, on a mismatch,
# quietly parses the headers as usual (-Winvalid-pch says so in the build log), so this changes
# build time, never meaning. Clang refuses a mismatch instead: with clang nothing is shared.
option(PD_PRECOMPILE_HEADERS "Precompile <QtTest> for the tests (GCC)" ON)
if(PD_PRECOMPILE_HEADERS AND NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    set(PD_PRECOMPILE_HEADERS OFF)
endif()
if(PD_PRECOMPILE_HEADERS)
    target_compile_options(pd_options INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Winvalid-pch>)
endif()

# pd_precompiled_header_group(KIND LIBS lib... HEADERS header...): a target that only builds
# HEADER... precompiled with the compile flags that linking LIBS gives, for the executables of
# this directory whose flags are those (KIND names them) to share: QtTest's QT_TESTCASE_BUILDDIR
# is the directory's, so a group serves one directory.
function(pd_precompiled_header_group kind)
    cmake_parse_arguments(G "" "" "LIBS;HEADERS" ${ARGN})
    if(NOT PD_PRECOMPILE_HEADERS)
        return()
    endif()
    file(RELATIVE_PATH dir ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
    string(MAKE_C_IDENTIFIER "pd_pch_${dir}_${kind}" group)
    file(CONFIGURE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/${group}.cpp
         CONTENT "// Builds ${group}'s precompiled header; no code of its own.\n")
    add_library(${group} OBJECT ${CMAKE_CURRENT_BINARY_DIR}/${group}.cpp)
    target_link_libraries(${group} PRIVATE ${G_LIBS})
    # The same position-independence as the executables that reuse it (GCC checks -fPIC).
    set_target_properties(${group} PROPERTIES AUTOMOC OFF POSITION_INDEPENDENT_CODE ON)
    set(headers)
    foreach(header IN LISTS G_HEADERS)
        list(APPEND headers "$<$<COMPILE_LANGUAGE:CXX>:${header}>")
    endforeach()
    target_precompile_headers(${group} PRIVATE ${headers})
    set_property(DIRECTORY PROPERTY PD_PCH_GROUP_${kind} ${group})
endfunction()

# pd_reuse_precompiled_headers(TARGET KIND): TARGET's files use this directory's KIND group,
# if it has one. Its AUTOMOC file is left out: it is (nearly) empty, and loading the header
# would cost it more than it saves.
function(pd_reuse_precompiled_headers target kind)
    get_property(group DIRECTORY PROPERTY PD_PCH_GROUP_${kind})
    if(group)
        target_precompile_headers(${target} REUSE_FROM ${group})
        set_source_files_properties(${CMAKE_CURRENT_BINARY_DIR}/${target}_autogen/mocs_compilation.cpp
                                    PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
    endif()
endfunction()
