# Browser test of the HTML reports (tests/browser/): render each report in
# headless Chromium at 1280 and 1920 px, check console errors, SVG sizes, no
# horizontal overflow, no overlapping labels, the warnings / notes sections
# and a non-blank screenshot. `make test` installs Debian's chromium (scripts/install-deps.sh,
# optional list); where it cannot be installed the test is skipped with a
# message (ctest shows it as skipped, exit code 77).
find_program(TS_CHROMIUM NAMES chromium chromium-browser google-chrome)
find_package(ZLIB)

add_executable(browser_fixture ${CMAKE_SOURCE_DIR}/tests/browser/fixture.c)
target_compile_options(browser_fixture PRIVATE ${TS_WARNINGS})
target_link_libraries(browser_fixture PRIVATE trainsim_static)

if(NOT ZLIB_FOUND)
  add_test(NAME browser/reports COMMAND sh -c "echo 'SKIPPED: zlib not found, cannot check screenshots'; exit 77")
elseif(NOT TS_CHROMIUM)
  add_test(NAME browser/reports COMMAND sh -c
    "echo 'SKIPPED: chromium not installed (apt-get install chromium, or make deps)'; exit 77")
else()
  add_executable(png_stats ${CMAKE_SOURCE_DIR}/tests/browser/png_stats.c)
  target_link_libraries(png_stats PRIVATE ZLIB::ZLIB)
  add_test(NAME browser/reports
    COMMAND bash ${CMAKE_SOURCE_DIR}/tests/browser/run.sh ${TS_CHROMIUM}
            $<TARGET_FILE:png_stats> $<TARGET_FILE:browser_fixture> $<TARGET_FILE:trainsim>)
  set_tests_properties(browser/reports PROPERTIES TIMEOUT 600
    ENVIRONMENT "TRAINSIM_DATA=${CMAKE_SOURCE_DIR}/data")
endif()
set_tests_properties(browser/reports PROPERTIES SKIP_RETURN_CODE 77)
