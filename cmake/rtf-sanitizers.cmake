# RTF_SANITIZE applies to rtfkit's code only; llama.cpp's prebuilt libraries stay
# uninstrumented (the sanitized tests exercise our code, not ggml's kernels).
if(RTF_SANITIZE)
    string(REPLACE ";" "," _rtf_san "${RTF_SANITIZE}")
    message(STATUS "rtfkit: sanitizers ${_rtf_san}")
    add_compile_options(-fsanitize=${_rtf_san} -fno-omit-frame-pointer -fno-sanitize-recover=all -g)
    add_link_options(-fsanitize=${_rtf_san})
endif()
