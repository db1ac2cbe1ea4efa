# Pairs "Benchmark<Name>/tablekit" with "Benchmark<Name>/raw" lines of go test
# -bench output (any further sub-benchmarks are listed as they are) and
# prints a side-by-side table with the throughput ratio.
/^Benchmark/ {
  name = $1; sub(/-[0-9]+$/, "", name)
  split(name, p, "/"); base = p[1]; variant = substr(name, length(base) + 2)
  ns = ""; rate = ""; allocs = ""
  for (i = 2; i <= NF; i++) {
    if ($i == "ns/op") ns = $(i-1)
    if ($i == "entities/s") rate = $(i-1)
    if ($i == "allocs/op") allocs = $(i-1)
  }
  key = base SUBSEP variant
  if (!(key in seen)) { order[++n] = key; seen[key] = 1 }
  nsv[key] = ns; ratev[key] = rate; allocv[key] = allocs
}
END {
  printf "%-28s %-22s %14s %12s %12s %10s\n", "benchmark", "variant", "ns/op", "entities/s", "allocs/op", "vs raw"
  for (i = 1; i <= n; i++) {
    split(order[i], k, SUBSEP); raw = k[1] SUBSEP "raw"; ratio = ""
    if ((raw in ratev) && ratev[raw] > 0 && ratev[order[i]] != "") ratio = sprintf("%.2f", ratev[order[i]] / ratev[raw])
    else if ((raw in nsv) && nsv[order[i]] > 0 && k[2] != "raw") ratio = sprintf("%.2f", nsv[raw] / nsv[order[i]])
    printf "%-28s %-22s %14s %12s %12s %10s\n", k[1], k[2], nsv[order[i]], ratev[order[i]], allocv[order[i]], ratio
  }
}
