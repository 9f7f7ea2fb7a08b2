# RTF_SANITIZE applies to rtfkit's code only; llama.cpp's prebuilt libraries stay
# uninstrumented (the sanitized tests exercise our code, not ggml's kernels).
if(RTF_SANITIZE)
    string(REPLACE ";" "," _rtf_san "${RTF_SANITIZE}")
    message(STATUS "rtfkit: sanitizers ${_rtf_san}")
    # -O1 -g1 (line tables only), after the build type's -O2 -g: the sanitizer builds
    # exist to run the tests, and these flags halve their compile time on 2 cores
    # while keeping file:line in every report (measured: knobs.cpp under ASan 27 s -> 14 s).
    add_compile_options(-fsanitize=${_rtf_san} -fno-omit-frame-pointer -fno-sanitize-recover=all -O1 -g1)
    add_link_options(-fsanitize=${_rtf_san})
endif()
