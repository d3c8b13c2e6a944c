# The median of a list of numbers separated by spaces, for the benchmark
# scripts' awk programs (prepended to them).
function median(list,    n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 1; i <= n; ++i)
        for (j = i + 1; j <= n; ++j)
            if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
