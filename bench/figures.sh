# The benchmarks' figures (sourced): the best of repeated runs, and ratios.

# best max|min VALUES...: the largest or smallest of the figures, "nan"
# where none was measured (a run that failed gives an empty one)
best() {
    local how=$1
    shift
    printf "%s\n" "$@" | awk -v how="$how" '
        NF && (n == 0 || (how == "max" ? $1 > b : $1 < b)) { b = $1; n = 1 }
        END { if (n) print b; else print "nan" }'
}

# ratio A B: A / B, two decimals
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
