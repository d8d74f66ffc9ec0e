# The Chakra golden for gpt3-175b on 1024 GPUs writes 1.6 GB into its $OUT
# (removed by run_case.sh on any exit) and takes ~50 s (225 s under ASan):
# label it `slow` (ctest -LE slow skips it) and give it room before ctest's
# timeout kills it.
if(TEST golden/wl_chakra_gpt3_1024)
  set_tests_properties(golden/wl_chakra_gpt3_1024 PROPERTIES LABELS slow TIMEOUT 1200)
endif()
