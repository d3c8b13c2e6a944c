# Results of the tools' shell tests, one line each: PASS, SKIP, and FAIL,
# which sets $failed for the test's exit status (sourced by the tests).
#
# See file LICENSE for terms.

failed=0

pass() {
    echo "PASS: $1"
}

# fail DESCRIPTION [WHY]
fail() {
    echo "FAIL: $1${2:+ ($2)}"
    failed=1
}

skip() {
    echo "SKIP: $1"
}
