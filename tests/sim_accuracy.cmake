# bench/accuracy: predicted vs published training throughput (sim). A program,
# not a test: it prints figures (STYLE.md 16).
add_executable(accuracy ${CMAKE_SOURCE_DIR}/bench/accuracy.c ${CMAKE_SOURCE_DIR}/bench/accuracy_text.c
  ${CMAKE_SOURCE_DIR}/bench/runs_csv.c)
target_compile_options(accuracy PRIVATE ${TS_WARNINGS})
target_link_libraries(accuracy PRIVATE trainsim_static)
target_compile_definitions(accuracy PRIVATE TS_BENCH_DIR="${CMAKE_SOURCE_DIR}/bench")
# build/accuracy --runs: a user's runs file (columns in any order, tables by
# id prefix) and malformed ones (positioned errors, exit 3).
foreach(c runs_user runs_notes runs_gpu_variants runs_tp_overlap runs_software runs_2022 runs_moe runs_framework runs_quoted k22_table5
    runs_flops runs_bad_flops runs_bad_framework runs_missing_column runs_short_row runs_bad_dtype runs_bad_software runs_bad_count
    runs_bad_value runs_bad_metric runs_empty_gpu runs_bad_recompute runs_bad_rc_modules runs_bad_distopt runs_open_quote
    runs_after_quote runs_dup_column runs_late_value runs_header_only runs_nothing_scored runs_xval runs_xval_one
    runs_nofit_hint)
  add_test(NAME accuracy/${c}
    COMMAND bash ${CMAKE_SOURCE_DIR}/tests/accuracy/run.sh $<TARGET_FILE:accuracy> ${c})
  set_tests_properties(accuracy/${c} PROPERTIES ENVIRONMENT "TRAINSIM_DATA=${CMAKE_SOURCE_DIR}/data")
endforeach()
# The calibration recipes run the plans accuracy scores (tests/recipes/calibration.sh).
add_test(NAME recipes/calibration
  COMMAND bash ${CMAKE_SOURCE_DIR}/tests/recipes/calibration.sh $<TARGET_FILE:accuracy> $<TARGET_FILE:trainsim>)
set_tests_properties(recipes/calibration PROPERTIES ENVIRONMENT "TRAINSIM_DATA=${CMAKE_SOURCE_DIR}/data")
# an unknown option: named, with the usage, exit 2
add_test(NAME accuracy/bad_option
  COMMAND bash -c "out=$(\"$0\" --rnus x.csv 2>&1 >/dev/null); rc=$?; [ $rc = 2 ] && [ \"$out\" = \"$(cat \"$1\")\" ]"
          $<TARGET_FILE:accuracy> ${CMAKE_SOURCE_DIR}/tests/accuracy/bad_option.stderr)
# --csv OUT: one record per run (scored with its plan, prediction and rules,
# or why not), exactly tests/accuracy/runs_notes.out.csv; a malformed runs
# file writes no output file at all
add_test(NAME accuracy/csv_out
  COMMAND bash -c "d=$(mktemp -d) && cd \"$1\" && \"$0\" --runs runs_notes.csv --csv $d/o.csv >/dev/null && diff -u runs_notes.out.csv $d/o.csv && rm -rf $d"
          $<TARGET_FILE:accuracy> ${CMAKE_SOURCE_DIR}/tests/accuracy)
add_test(NAME accuracy/csv_out_bad_input
  COMMAND bash -c "d=$(mktemp -d) && cd \"$1\" && { \"$0\" --runs runs_bad_value.csv --csv $d/o.csv >/dev/null 2>&1; rc=$?; } ; [ $rc = 3 ] && [ -z \"$(ls -A $d)\" ] && rm -rf $d"
          $<TARGET_FILE:accuracy> ${CMAKE_SOURCE_DIR}/tests/accuracy)
set_tests_properties(accuracy/csv_out accuracy/csv_out_bad_input PROPERTIES ENVIRONMENT "TRAINSIM_DATA=${CMAKE_SOURCE_DIR}/data")
# --csv naming the runs file itself is refused (exit 2) and leaves it as it was
add_test(NAME accuracy/csv_out_same_file
  COMMAND bash -c "d=$(mktemp -d) && cp \"$1/runs_user.csv\" $d/r.csv && { \"$0\" --runs $d/r.csv --csv $d/r.csv >/dev/null 2>&1; rc=$?; } ; [ $rc = 2 ] && cmp -s \"$1/runs_user.csv\" $d/r.csv && [ \"$(ls $d)\" = r.csv ] && rm -rf $d"
          $<TARGET_FILE:accuracy> ${CMAKE_SOURCE_DIR}/tests/accuracy)
# --help: the usage and what each option does (exact); --csv without a file: named, exit 2
add_test(NAME accuracy/help
  COMMAND bash -c "diff -u \"$1\" <(\"$0\" --help)" $<TARGET_FILE:accuracy> ${CMAKE_SOURCE_DIR}/tests/accuracy/help.stdout)
add_test(NAME accuracy/csv_no_file
  COMMAND bash -c "out=$(\"$0\" --csv 2>&1 >/dev/null); rc=$?; [ $rc = 2 ] && [ \"$out\" = \"$(printf 'accuracy: --csv needs a file name\\nusage: accuracy [-v] [-r] [-x] [--runs FILE.csv | FILE.csv] [--csv OUT.csv]')\" ]"
          $<TARGET_FILE:accuracy>)
