# Locates llama.cpp and defines the target rtf::llama (ggml + libllama + libmtmd) and
# RTF_LLAMA_CPP_VERSION ("<tag> <commit>").
#
# Two ways in:
#   default              the pinned release, built and installed by scripts/fetch-llama.sh
#                        into .deps/llama.cpp-<tag>-<cpu|cuda>/install (RTF_LLAMA_PREFIX)
#   -DRTF_LLAMA_CPP_DIR  your own llama.cpp checkout, configured and built here (only the
#                        ggml, llama and mtmd targets)
file(STRINGS ${CMAKE_SOURCE_DIR}/scripts/llama-cpp.lock _lock REGEX "^LLAMA_TAG=")
string(REPLACE "LLAMA_TAG=" "" RTF_LLAMA_TAG "${_lock}")

add_library(rtf_llama INTERFACE)
add_library(rtf::llama ALIAS rtf_llama)

if(RTF_LLAMA_CPP_DIR)
    if(NOT EXISTS ${RTF_LLAMA_CPP_DIR}/include/llama.h)
        message(FATAL_ERROR "RTF_LLAMA_CPP_DIR=${RTF_LLAMA_CPP_DIR} is not a llama.cpp checkout (no include/llama.h)")
    endif()
    set(LLAMA_BUILD_COMMON OFF CACHE BOOL "" FORCE)
    set(LLAMA_BUILD_TESTS OFF CACHE BOOL "" FORCE)
    set(LLAMA_BUILD_TOOLS OFF CACHE BOOL "" FORCE)
    set(LLAMA_BUILD_EXAMPLES OFF CACHE BOOL "" FORCE)
    set(LLAMA_BUILD_SERVER OFF CACHE BOOL "" FORCE)
    set(LLAMA_BUILD_APP OFF CACHE BOOL "" FORCE)
    set(LLAMA_BUILD_MTMD ON CACHE BOOL "" FORCE)
    set(LLAMA_OPENSSL OFF CACHE BOOL "" FORCE)
    set(GGML_CUDA ${RTF_CUDA} CACHE BOOL "" FORCE)
    add_subdirectory(${RTF_LLAMA_CPP_DIR} ${CMAKE_BINARY_DIR}/llama.cpp EXCLUDE_FROM_ALL SYSTEM)
    target_link_libraries(rtf_llama INTERFACE ggml llama mtmd)
    execute_process(COMMAND git -C ${RTF_LLAMA_CPP_DIR} rev-parse --short=12 HEAD
        OUTPUT_VARIABLE _commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    set(RTF_LLAMA_CPP_VERSION "custom ${_commit}")
    set(RTF_VOCAB_DIR ${RTF_LLAMA_CPP_DIR}/models)
else()
    if(NOT RTF_LLAMA_PREFIX)
        if(RTF_CUDA)
            set(_variant cuda)
        else()
            set(_variant cpu)
        endif()
        set(RTF_LLAMA_PREFIX ${CMAKE_SOURCE_DIR}/.deps/llama.cpp-${RTF_LLAMA_TAG}-${_variant}/install)
    endif()
    if(NOT EXISTS ${RTF_LLAMA_PREFIX}/include/llama.h)
        message(FATAL_ERROR "llama.cpp not found at ${RTF_LLAMA_PREFIX}.\n"
            "Run ./scripts/setup.sh (or scripts/fetch-llama.sh), or pass -DRTF_LLAMA_CPP_DIR=<your llama.cpp checkout>.")
    endif()
    find_package(ggml REQUIRED PATHS ${RTF_LLAMA_PREFIX} NO_DEFAULT_PATH)
    find_package(llama REQUIRED PATHS ${RTF_LLAMA_PREFIX} NO_DEFAULT_PATH)
    find_library(RTF_MTMD_LIBRARY mtmd PATHS ${RTF_LLAMA_PREFIX}/lib NO_DEFAULT_PATH REQUIRED)
    target_link_libraries(rtf_llama INTERFACE llama ggml::ggml ggml::ggml-base ${RTF_MTMD_LIBRARY})
    target_include_directories(rtf_llama SYSTEM INTERFACE ${RTF_LLAMA_PREFIX}/include)
    file(READ ${RTF_LLAMA_PREFIX}/share/rtf/llama-cpp-version RTF_LLAMA_CPP_VERSION)
    string(STRIP "${RTF_LLAMA_CPP_VERSION}" RTF_LLAMA_CPP_VERSION)
    set(RTF_VOCAB_DIR ${RTF_LLAMA_PREFIX}/share/rtf/vocab)
    set(CMAKE_BUILD_RPATH ${RTF_LLAMA_PREFIX}/lib)
    # `cmake --install`: the pinned llama.cpp's shared libraries go beside librtf.so and the
    # rtf binary's lib/ (both find them through their RUNPATH, $ORIGIN-relative).
    install(DIRECTORY ${RTF_LLAMA_PREFIX}/lib/ DESTINATION ${CMAKE_INSTALL_LIBDIR}
        FILES_MATCHING PATTERN "*.so*" PATTERN cmake EXCLUDE PATTERN pkgconfig EXCLUDE)
endif()
message(STATUS "rtfkit: llama.cpp ${RTF_LLAMA_CPP_VERSION}")

# Vulkan: ggml's Vulkan backend built from the same pinned tree as a loadable module
# (GGML_BACKEND_DL), loaded at run time by src/machine/backend-devices.cpp. The CPU build's
# libggml is unchanged, so the release build gains Vulkan without compiling anything twice.
if(RTF_VULKAN)
    if(NOT RTF_VULKAN_MODULE)
        set(RTF_VULKAN_MODULE ${CMAKE_SOURCE_DIR}/.deps/llama.cpp-${RTF_LLAMA_TAG}-vulkan/module/libggml-vulkan.so)
    endif()
    if(NOT EXISTS ${RTF_VULKAN_MODULE})
        message(FATAL_ERROR "RTF_VULKAN=ON but ggml's Vulkan module is not at ${RTF_VULKAN_MODULE}.\n"
            "Run ./scripts/setup.sh --vulkan (or scripts/fetch-llama.sh --vulkan), or set RTF_VULKAN_MODULE.")
    endif()
    find_package(Vulkan REQUIRED)
    message(STATUS "rtfkit: Vulkan module ${RTF_VULKAN_MODULE}")
    # `cmake --install`: the module beside the libraries, where an installed rtf / librtf.so
    # looks first (src/machine/backend-devices.cpp)
    install(FILES ${RTF_VULKAN_MODULE} DESTINATION ${CMAKE_INSTALL_LIBDIR}/rtfkit)
endif()
