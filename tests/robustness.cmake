# test_robustness: every heap allocation made by trainsim code in this test
# goes through the test's failure-injecting wrappers (see the file's header).
if(TARGET test_robustness)
  target_link_options(test_robustness PRIVATE
    -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup)
  target_link_libraries(test_robustness PRIVATE PkgConfig::JANSSON)
endif()
