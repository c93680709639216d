# SPDX-License-Identifier: GPL-3.0-or-later
# Run after each link of a test executable made with quantlab_add_test(... ONE_PROCESS_PER_SUITE):
# lists its tests (--gtest_list_tests) and writes CTEST_FILE, which adds one CTest test per suite
# (run as `EXE --gtest_filter=Suite.*`) and one disabled CTest test per DISABLED_ test, so that
# `ctest` still lists what is disabled.
# EXCLUDED: negative --gtest_filter patterns ("-A.B:C.D"): left out of the listing and of every
# suite's run (a suite left with no test is not added).
#   cmake -D TEST_EXECUTABLE=... -D CTEST_FILE=... -D WORKING_DIR=... [-D EXCLUDED=-A.B] -P gtest_suites.cmake
set(excluded "")
if(EXCLUDED)
  if(NOT EXCLUDED MATCHES "^-")
    message(FATAL_ERROR "EXCLUDED must be negative gtest filter patterns (-A.B:C.D), not '${EXCLUDED}'")
  endif()
  set(excluded "${EXCLUDED}")
endif()
execute_process(COMMAND "${TEST_EXECUTABLE}" --gtest_list_tests "--gtest_filter=*${excluded}"
                OUTPUT_VARIABLE listing ERROR_VARIABLE errors RESULT_VARIABLE rc TIMEOUT 120)
if(NOT rc EQUAL 0)
  file(REMOVE "${CTEST_FILE}")
  message(FATAL_ERROR "${TEST_EXECUTABLE} --gtest_list_tests failed (${rc}): ${errors}")
endif()
string(REPLACE ";" "\\;" listing "${listing}")
string(REPLACE "\n" ";" lines "${listing}")
set(script "")
set(suite "")
set(suite_added FALSE)
foreach(line IN LISTS lines)
  if(line MATCHES "^([^ #]+)\\.( |$)")  # "Suite." or "Prefix/Suite/0.  # TypeParam = ..."
    set(suite "${CMAKE_MATCH_1}")
    set(suite_added FALSE)
  elseif(line MATCHES "^  ([^ #]+)" AND NOT suite STREQUAL "")
    set(test "${CMAKE_MATCH_1}")
    if(test MATCHES "^DISABLED_" OR suite MATCHES "(^|/)DISABLED_")
      string(APPEND script "add_test([==[${suite}.${test}]==] [==[${TEST_EXECUTABLE}]==] [==[--gtest_filter=${suite}.${test}]==])\n"
                           "set_tests_properties([==[${suite}.${test}]==] PROPERTIES DISABLED TRUE)\n")
    elseif(NOT suite_added)  # a suite is added with its first enabled test
      set(suite_added TRUE)
      string(APPEND script "add_test([==[${suite}]==] [==[${TEST_EXECUTABLE}]==] [==[--gtest_filter=${suite}.*${excluded}]==])\n"
                           "set_tests_properties([==[${suite}]==] PROPERTIES WORKING_DIRECTORY [==[${WORKING_DIR}]==] "
                           "SKIP_RETURN_CODE 77 ENVIRONMENT OMP_WAIT_POLICY=passive)\n")
    endif()
  endif()
endforeach()
file(WRITE "${CTEST_FILE}" "${script}")
