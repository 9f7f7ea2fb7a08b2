# Warnings for rtfkit's own targets (not for llama.cpp's): rtf_target_warnings(<target>)
function(rtf_target_warnings target)
    target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow
        -Wnon-virtual-dtor -Wcast-align -Woverloaded-virtual -Wformat=2 -Wimplicit-fallthrough)
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
        # GCC 12 reports false -Wrestrict positives inside libstdc++ string concatenation (GCC PR105651).
        target_compile_options(${target} PRIVATE -Wno-restrict)
    endif()
    if(RTF_WARNINGS_AS_ERRORS)
        target_compile_options(${target} PRIVATE -Werror)
    endif()
endfunction()
